"""Property: no call outside the role-by-tool table is allowed, and no refused call changes anything.

Hypothesis draws a role, a tool and arguments: the role's own call or the foreign one from
:mod:`tests.capabilities.access_world`, with the fields that name a target (``proposal_id``,
``agent_id``, ``memory_id``) redrawn from everything the project holds, another agent's ID, or
nothing. The world carries over between examples, so allowed calls move it along (a reject
closes a proposal, a vote moves a round) and later examples meet those states too.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio.from_thread
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from capabilities.mcp import call_tool
from capabilities.mcp.tools import build_registry
from capabilities.policy import ACCESS, Reach
from capabilities.principals import Principal
from store import NotFound, Store
from tests.capabilities.access_world import (
    AGENT_OF,
    ROLES,
    World,
    arguments,
    build,
    foreign_tools,
    services_of,
)
from tests.helpers import project_snapshot

REGISTRY = build_registry()
ROSTER = (
    "implementer-1",
    "implementer-2",
    "reviewer-1",
    "reviewer-2",
    "security-1",
    "memory-oracle-1",
    "nobody",
)


@pytest.fixture
def portal() -> Iterator[anyio.from_thread.BlockingPortal]:
    with anyio.from_thread.start_blocking_portal("asyncio") as running:
        yield running


@pytest.fixture
def world(store: Store) -> World:
    return build(store)


def _call_strategy(world: World) -> st.SearchStrategy[tuple[str, str, dict[str, Any]]]:
    proposals = [world.mine, world.theirs, world.draft_mine, world.draft_theirs, world.ready, "P-nope"]
    memories = [world.memory_op, world.memory_mine, world.memory_theirs, "M-nope"]

    @st.composite
    def draw(data: st.DrawFn) -> tuple[str, str, dict[str, Any]]:
        role = data(st.sampled_from(ROLES))
        tool = data(st.sampled_from(REGISTRY.names()))
        foreign = tool in foreign_tools() and role in AGENT_OF and data(st.booleans())
        args = dict(arguments(world, role, tool, foreign=foreign))
        if "proposal_id" in args and data(st.booleans()):
            args["proposal_id"] = data(st.sampled_from(proposals))
        if tool in ("vote.cast", "proposal.create") and data(st.booleans()):
            agent = data(st.sampled_from((None, *ROSTER)))
            args.pop("agent_id", None)
            if agent is not None:
                args["agent_id"] = agent
        if tool == "memory.record" and data(st.booleans()):
            args["memory_id"] = data(st.sampled_from(memories))
        return role, tool, args

    return draw()


def _own_target(world: World, principal: Principal, tool: str, args: dict[str, Any]) -> bool:
    """Whether an ``own`` call aims only at the caller's identity and work (read before the call)."""
    me = principal.actor
    store = world.store
    if tool in ("vote.cast", "proposal.create"):
        return args.get("agent_id") in (None, me)
    if tool in ("proposal.attach_patch", "proposal.request_review"):
        try:
            return bool(store.proposals.get(args["proposal_id"])["agent_id"] == me)
        except NotFound:
            return True  # nothing to act on: the call can only fail
    if tool == "memory.record":
        memory_id = args.get("memory_id")
        if memory_id is None:
            return True
        row = store.db.read(
            lambda conn: conn.execute(
                "SELECT written_by FROM memory_entries WHERE id = ?", (memory_id,)
            ).fetchone()
        )
        return row is None or row[0] == f"agent:{me}"
    raise AssertionError(f"no own-target rule for {tool}")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_no_call_outside_the_table_and_no_refusal_changes_anything(
    world: World, portal: anyio.from_thread.BlockingPortal, data: st.DataObject
) -> None:
    role, tool, args = data.draw(_call_strategy(world))
    principal = world.principals[role]
    reach = ACCESS[role].get(tool)
    permitted = reach is not None and (reach is not Reach.OWN or _own_target(world, principal, tool, args))
    before = project_snapshot(world.store.paths)
    outcome = portal.call(call_tool, services_of(world), REGISTRY, principal, tool, args)
    if outcome.ok:
        assert permitted, (role, tool, args, outcome.body())
    else:
        assert project_snapshot(world.store.paths) == before, (role, tool, args, outcome.body())
        if not permitted:
            assert outcome.error is not None and outcome.error.code == "forbidden", (role, tool, args)
