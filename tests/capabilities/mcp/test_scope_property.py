"""Property: for every tool and every foreign proposal, task or scope argument, an oracle is refused.

The oracle's capability is bound to proposal P, task T and scopes {T, "project"}. Whatever tool it
calls, an argument naming another proposal, task or scope (or another proposal's memory entry to
replace) gets ``forbidden``, and no table or patch file changes. Calls go through
:func:`capabilities.mcp._dispatch.call_tool`, the one path every transport takes.
"""

from __future__ import annotations

import string
from collections.abc import Iterator
from typing import Any

import anyio.from_thread
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from capabilities.mcp._dispatch import call_tool
from capabilities.mcp._registry import ToolRegistry
from capabilities.mcp.tools import build_registry
from capabilities.policy import MEMORY_ORACLE_TOOLS
from capabilities.services import Services
from store import Store
from tests.capabilities.oracle_helpers import OracleWorld, build_world
from tests.helpers import project_snapshot

_ID = st.text(alphabet=string.ascii_letters + string.digits + "-_.:", min_size=1, max_size=40)
_ANY_TEXT = st.text(min_size=0, max_size=60)


@pytest.fixture
def portal() -> Iterator[anyio.from_thread.BlockingPortal]:
    with anyio.from_thread.start_blocking_portal("asyncio") as running:
        yield running


def _foreign(own: str, *known: str) -> st.SearchStrategy[str]:
    return st.one_of(
        st.sampled_from(known),
        _ID,
        _ID.map(lambda suffix: f"{own[:2]}{suffix}"),
        st.text(min_size=1, max_size=30),
    ).filter(lambda value: value not in ("", own))


def arguments_for(tool: str, world: OracleWorld, registry: ToolRegistry) -> st.SearchStrategy[dict[str, Any]]:
    """Arguments for ``tool`` with at least one naming another proposal, task or scope."""
    fp = _foreign(world.proposal_id, world.foreign_proposal_id, "P-nope")
    ft = _foreign(world.task_id, world.foreign_task_id, world.proposal_id, "project", "T-nope")
    fs = _foreign("project", world.foreign_task_id, world.proposal_id, world.foreign_proposal_id).filter(
        lambda value: value not in (world.task_id, "project")
    )
    own_scope = st.sampled_from([world.task_id, "project"])
    # Entries the oracle did not record: the operator's, in or out of its scopes.
    others_entry = st.sampled_from([world.task_memory, world.project_memory, world.foreign_memory])
    text = _ANY_TEXT
    ids = st.lists(_ID, max_size=3)
    events = st.lists(st.integers(0, 10**6), max_size=3)
    by_tool: dict[str, list[st.SearchStrategy[dict[str, Any]]]] = {
        "task.history": [
            st.fixed_dictionaries({"task_id": ft}, optional={"proposal_id": st.just(world.proposal_id)}),
            st.fixed_dictionaries({"proposal_id": fp}, optional={"task_id": st.just(world.task_id)}),
        ],
        "patch.inspect": [
            st.fixed_dictionaries({"proposal_id": fp}, optional={"max_bytes": st.integers(-5, 2_000_000)}),
        ],
        "oracle.warn": [
            st.fixed_dictionaries(
                {"message_md": text, "cited_memory_ids": ids, "proposal_id": fp},
                optional={"cited_event_ids": events, "task_id": st.just(world.task_id)},
            ),
            st.fixed_dictionaries(
                {"message_md": text, "cited_memory_ids": ids, "task_id": ft},
                optional={"cited_event_ids": events, "proposal_id": st.just(world.proposal_id)},
            ),
        ],
        "memory.query": [
            st.fixed_dictionaries({"scope": fs}, optional={"query": text, "limit": st.integers(-3, 50)}),
        ],
        "memory.record": [
            st.fixed_dictionaries({"scope": fs, "kind": text, "title": text, "body_md": text}),
            st.fixed_dictionaries(
                {"scope": own_scope, "kind": text, "title": text, "body_md": text, "memory_id": others_entry}
            ),
        ],
        "memory.summarize": [
            st.fixed_dictionaries({"scope": fs}),
            st.fixed_dictionaries({"task_id": ft}, optional={"scope": own_scope}),
            st.fixed_dictionaries({"proposal_id": fp}, optional={"scope": own_scope}),
        ],
    }
    if tool in by_tool:
        return st.one_of(*by_tool[tool])
    # Every other tool is outside the allow-list: refused whatever it names.
    spec = registry.get(tool)
    assert spec is not None
    naming = {
        name: (fp if "proposal" in name else ft if "task" in name else fs if "scope" in name else text)
        for name in sorted(spec.args_model.model_fields)
    }
    return st.fixed_dictionaries(naming)


def test_the_oracle_tools_all_have_foreign_argument_cases() -> None:
    assert {
        "task.history",
        "patch.inspect",
        "oracle.warn",
        "memory.query",
        "memory.record",
        "memory.summarize",
    } == (MEMORY_ORACLE_TOOLS)


@pytest.mark.parametrize("tool", build_registry().names())
def test_foreign_arguments_are_always_forbidden_and_change_nothing(
    tool: str,
    services: Services,
    store: Store,
    registry: ToolRegistry,
    portal: anyio.from_thread.BlockingPortal,
) -> None:
    world = build_world(store)
    before = project_snapshot(store.paths)

    @given(arguments_for(tool, world, registry))
    @settings(
        max_examples=100 if tool in MEMORY_ORACLE_TOOLS else 20,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    def refused(arguments: dict[str, Any]) -> None:
        outcome = portal.call(call_tool, services, registry, world.principal, tool, arguments)
        assert outcome.error is not None, (arguments, outcome.result)
        assert outcome.error.code == "forbidden", (arguments, outcome.error.to_dict())
        assert project_snapshot(store.paths) == before, arguments

    refused()
