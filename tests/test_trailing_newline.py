"""An ID or a name with a trailing newline is refused everywhere, never matched or stored.

``re.match(r"^...$")`` accepts ``"M-1\\n"`` (``$`` matches before a final newline): such a value
would be stored beside ``"M-1"`` looking like it, or looked up as something else. Every shape check
uses ``re.fullmatch``; these tests hold the surfaces to it (the store's functions, MCP tool calls
through the dispatch every transport uses, and the CLI in a subprocess).
"""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest

from capabilities.mcp import call_tool
from capabilities.mcp.tools import build_registry
from capabilities.principals import local_operator
from capabilities.services import Services
from store import InvalidArgument, ProjectPaths, Store
from store.access._tokens import check_operator_name
from store.work._vocabulary import check_agent_id, check_object_id
from tests.capabilities.oracle_helpers import build_world
from tests.helpers import project_snapshot

pytestmark = pytest.mark.anyio

_ENDINGS = ("\n", "\r\n", "\r")


@pytest.mark.parametrize("ending", _ENDINGS, ids=repr)
def test_the_store_checks_refuse_a_line_break_at_the_end(ending: str) -> None:
    for check in (lambda v: check_object_id("task_id", v), check_agent_id, check_operator_name):
        assert check("T-1") == "T-1"
        with pytest.raises(InvalidArgument):
            check(f"T-1{ending}")


async def test_work_and_memory_ids_with_a_newline_are_invalid_argument_over_mcp(store: Store) -> None:
    world = build_world(store)
    services, registry, operator = Services(store=store), build_registry(), local_operator()
    task, proposal, memory = world.task_id, world.proposal_id, world.task_memory
    calls: list[tuple[str, dict[str, Any]]] = [
        ("task.get", {"task_id": f"{task}\n"}),
        ("proposal.get", {"proposal_id": f"{proposal}\n"}),
        ("proposal.timeline", {"proposal_id": f"{proposal}\n"}),
        ("proposal.list", {"task_id": f"{task}\n"}),
        ("vote.list", {"proposal_id": f"{proposal}\n"}),
        ("patch.validate", {"proposal_id": f"{proposal}\n"}),
        (
            "vote.cast",
            {"proposal_id": proposal, "agent_id": "reviewer-1\n", "vote": "approve", "reason_md": "ok"},
        ),
        (
            "proposal.create",
            {"task_id": f"{task}\n", "agent_id": "implementer-1", "title": "t", "patch": "x"},
        ),
        ("proposal.create", {"task_id": task, "agent_id": "implementer-1\n", "title": "t", "patch": "x"}),
        ("decision.record", {"outcome": "noted", "rationale_md": "r", "task_id": f"{task}\n"}),
        (
            "memory.record",
            {"memory_id": f"{memory}\n", "scope": "project", "kind": "fact", "title": "t", "body_md": "b"},
        ),
        ("memory.mark_stale", {"memory_id": f"{memory}\n", "reason_md": "why"}),
    ]
    for tool, arguments in calls:
        before = project_snapshot(store.paths)
        outcome = await call_tool(services, registry, operator, tool, arguments)
        assert outcome.error is not None, (tool, arguments, outcome.result)
        assert outcome.error.code == "invalid_argument", (tool, outcome.error.to_dict())
        assert project_snapshot(store.paths) == before, tool


def test_a_memory_id_with_a_newline_never_becomes_a_second_entry(store: Store) -> None:
    entry = store.memory.record(scope="project", kind="fact", title="t", body_md="b", actor="op")
    for ending in _ENDINGS:
        with pytest.raises(InvalidArgument, match="memory_id"):
            store.memory.record(
                memory_id=f"{entry.id}{ending}",
                scope="project",
                kind="fact",
                title="t",
                body_md="c",
                actor="op",
            )
    assert [found.id for found in store.memory.query()] == [entry.id]
    assert store.memory_admin.exists(entry.id) and not store.memory_admin.exists(f"{entry.id}\n")


def _cli(argv: list[str], project: ProjectPaths, *args: str) -> tuple[int, dict[str, Any]]:
    done = subprocess.run(
        [*argv, "--json", "--root", str(project.root), *args], capture_output=True, text=True, timeout=60
    )
    return done.returncode, json.loads(done.stdout)


def test_token_and_grant_labels_with_a_newline_are_refused_by_the_cli(
    roundtable_argv: list[str], project: ProjectPaths, store: Store
) -> None:
    world = build_world(store)
    before = project_snapshot(project)
    for args in (
        ("token", "create", "--name", "alice\n"),
        ("token", "create", "--name", "alice\r\n"),
        ("capability", "grant", "--proposal", f"{world.proposal_id}\n", "--role", "memory_oracle"),
        ("capability", "grant", "--proposal", world.proposal_id, "--role", "memory_oracle\n"),
        ("capability", "revoke", f"{world.grant_id}\n"),
        ("task", "get", f"{world.task_id}\n"),
    ):
        code, answer = _cli(roundtable_argv, project, *args)
        # 2: a usage error (argparse's choices), 1: refused by the store; the same code either way.
        assert code in (1, 2) and answer["error"]["code"] == "invalid_argument", (args, answer)
    assert project_snapshot(project) == before
    assert store.grants.list_tokens() == []


def test_grant_labels_with_a_newline_are_refused_by_the_store(store: Store) -> None:
    world = build_world(store)
    good: dict[str, Any] = {
        "proposal_id": world.proposal_id,
        "role": "memory_oracle",
        "agent_id": "memory-oracle-1",
        "tools": frozenset({"memory.query"}),
        "ttl_seconds": 60,
        "actor": "operator",
    }
    before = project_snapshot(store.paths)
    for field in ("proposal_id", "role", "agent_id"):
        with pytest.raises(InvalidArgument, match=field):
            store.grants.mint_grant(**{**good, field: f"{good[field]}\n"})
    with pytest.raises(InvalidArgument, match="tool"):
        store.grants.mint_grant(**{**good, "tools": frozenset({"memory.query\n"})})
    with pytest.raises(InvalidArgument, match="launch_id"):
        store.grants.mint_grant(**good, launch_id="L-1\n")
    assert project_snapshot(store.paths) == before
