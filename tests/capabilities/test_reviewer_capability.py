"""A launched reviewer's capability: its own proposal, its own agent, its open round, nothing else.

Calls go through :func:`capabilities.mcp.call_tool` (the one path of every transport) and, for
the token's life, over a real launch socket with the real MCP client.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio.from_thread
import pytest

from capabilities.auth import issue_capability, principal_from_record
from capabilities.mcp import call_tool
from capabilities.mcp.tools import build_registry
from capabilities.policy import CAPABILITY_TOOLSETS, REVIEWER_LAUNCH, SECURITY_LAUNCH, toolset_for
from capabilities.principals import Principal
from capabilities.services import Services
from capabilities.serving import build_launch_app, serving
from store import InvalidArgument, Store
from tests.helpers import project_snapshot
from tests.store.work_helpers import DIFF, DIFF_V2, SECURITY_DIFF, new_task, seed_files

REGISTRY = build_registry()


@pytest.fixture
def portal() -> Iterator[anyio.from_thread.BlockingPortal]:
    with anyio.from_thread.start_blocking_portal("asyncio") as running:
        yield running


def _proposal(store: Store, patch: str = DIFF) -> tuple[str, str]:
    task = new_task(store)
    proposal, _ = store.proposals.create(
        task_id=task.id, agent_id="implementer-1", title="t", patch=patch, actor="op"
    )
    store.reviews.request_review(proposal_id=proposal["id"], actor="op")
    return str(proposal["id"]), task.id


def _reviewer(
    store: Store, proposal_id: str, agent: str = "reviewer-1", role: str = REVIEWER_LAUNCH
) -> Principal:
    issued = issue_capability(
        store, proposal_id=proposal_id, role=role, actor="op", ttl_seconds=600, agent_id=agent
    )
    return principal_from_record(store.grants.authenticate(issued.token))


def _call(
    portal: anyio.from_thread.BlockingPortal, store: Store, who: Principal, tool: str, args: dict[str, Any]
) -> Any:
    return portal.call(call_tool, Services(store), REGISTRY, who, tool, args)


def _refused(
    portal: anyio.from_thread.BlockingPortal,
    store: Store,
    who: Principal,
    tool: str,
    args: dict[str, Any],
    code: str = "forbidden",
) -> None:
    before = project_snapshot(store.paths)
    outcome = _call(portal, store, who, tool, args)
    assert outcome.error is not None and outcome.error.code == code, (tool, args, outcome.body())
    assert project_snapshot(store.paths) == before, (tool, args)


def test_a_reviewer_capability_holds_exactly_its_tools(store: Store) -> None:
    mine, _ = _proposal(store)
    reviewer = _reviewer(store, mine)
    assert toolset_for(reviewer) == CAPABILITY_TOOLSETS[REVIEWER_LAUNCH]
    assert toolset_for(reviewer) == {
        "proposal.get", "proposal.timeline", "task.history", "patch.inspect",
        "memory.query", "memory.summarize", "memory.record", "vote.cast",
    }  # fmt: skip
    assert reviewer.actor == "reviewer-1" and reviewer.grant is not None
    assert reviewer.grant.proposal_id == mine


def test_it_votes_as_itself_on_its_proposal_and_nowhere_else(
    store: Store, portal: anyio.from_thread.BlockingPortal
) -> None:
    seed_files(store.paths.root)
    mine, _ = _proposal(store)
    other, _ = _proposal(store)
    reviewer = _reviewer(store, mine)
    vote = {"proposal_id": mine, "vote": "approve", "reason_md": "tests pass"}
    _refused(portal, store, reviewer, "vote.cast", {**vote, "agent_id": "reviewer-2"})
    _refused(portal, store, reviewer, "vote.cast", {**vote, "proposal_id": other})
    cast = _call(portal, store, reviewer, "vote.cast", vote)
    assert cast.ok, cast.body()
    assert cast.result["vote"]["agent_id"] == "reviewer-1"
    for tool, args in (
        ("patch.apply", {"proposal_id": mine}),
        ("patch.reject", {"proposal_id": mine, "reason_md": "no"}),
        ("decision.record", {"outcome": "noted", "rationale_md": "r", "proposal_id": mine}),
        ("proposal.attach_patch", {"proposal_id": mine, "patch": DIFF_V2}),
        ("memory.mark_stale", {"memory_id": "M-x", "reason_md": "r"}),
        ("review.run", {"proposal_id": mine}),
        ("vote.list", {"proposal_id": other}),
    ):
        _refused(portal, store, reviewer, tool, args)


def test_it_reads_only_its_own_proposal_and_patch(
    store: Store, portal: anyio.from_thread.BlockingPortal
) -> None:
    mine, _ = _proposal(store)
    other, _ = _proposal(store, SECURITY_DIFF)
    reviewer = _reviewer(store, mine)
    assert _call(portal, store, reviewer, "patch.inspect", {}).result["proposal_id"] == mine
    assert _call(portal, store, reviewer, "proposal.get", {"proposal_id": mine}).ok
    assert _call(portal, store, reviewer, "proposal.timeline", {"proposal_id": mine}).ok
    _refused(portal, store, reviewer, "patch.inspect", {"proposal_id": other})
    _refused(portal, store, reviewer, "patch.inspect", {"version": 1})  # only the current version
    _refused(portal, store, reviewer, "proposal.get", {"proposal_id": other})
    _refused(portal, store, reviewer, "proposal.timeline", {"proposal_id": other})
    _refused(portal, store, reviewer, "task.history", {"proposal_id": other})


def test_it_records_memory_in_its_task_scope_only(
    store: Store, portal: anyio.from_thread.BlockingPortal
) -> None:
    mine, task = _proposal(store)
    reviewer = _reviewer(store, mine)
    entry = {"kind": "fact", "title": "flaky test", "body_md": "test_x is flaky"}
    _refused(portal, store, reviewer, "memory.record", {**entry, "scope": "project"})
    recorded = _call(portal, store, reviewer, "memory.record", {**entry, "scope": task})
    assert recorded.ok and recorded.result["entry"]["scope"] == task
    assert _call(
        portal, store, reviewer, "memory.query", {"scope": "project"}
    ).ok  # reading the project is fine


def test_it_cannot_vote_in_a_closed_round(store: Store, portal: anyio.from_thread.BlockingPortal) -> None:
    mine, _ = _proposal(store)
    reviewer = _reviewer(store, mine)
    store.decisions.reject(proposal_id=mine, reason_md="closed", actor="op")
    before = project_snapshot(store.paths)
    outcome = _call(
        portal, store, reviewer, "vote.cast", {"proposal_id": mine, "vote": "approve", "reason_md": "late"}
    )
    assert outcome.error is not None and outcome.error.code in ("conflict", "unauthenticated", "forbidden")
    assert project_snapshot(store.paths) == before


def test_only_voting_roster_agents_get_a_reviewer_capability(store: Store) -> None:
    mine, _ = _proposal(store, SECURITY_DIFF)
    with pytest.raises(InvalidArgument):
        _reviewer(store, mine, agent="implementer-1")
    with pytest.raises(InvalidArgument):
        _reviewer(store, mine, agent="security-1")  # a Security agent launches as security
    with pytest.raises(InvalidArgument):
        _reviewer(store, mine, agent="nobody")
    security = _reviewer(store, mine, agent="security-1", role=SECURITY_LAUNCH)
    assert security.role == SECURITY_LAUNCH and security.actor == "security-1"


@pytest.mark.anyio
async def test_after_its_launch_the_token_is_dead(store: Store, tmp_path: Path) -> None:
    from mcp import MCPError

    from tests.capabilities.http_helpers import mcp_client

    mine, _ = _proposal(store)
    issued = issue_capability(
        store,
        proposal_id=mine,
        role=REVIEWER_LAUNCH,
        actor="op",
        ttl_seconds=600,
        agent_id="reviewer-1",
        launch_id="L-r",
    )
    services = Services(store)
    app = build_launch_app(services, issued.record.id)
    async with (
        serving(app, uds=str(tmp_path / "r.sock")) as socket,
        mcp_client(socket, issued.token) as client,
    ):
        assert not (await client.call_tool("patch.inspect", {})).is_error
        store.grants.revoke_for_launch("L-r", actor="supervisor", reason="launch_ended")
        with pytest.raises(MCPError):
            await client.call_tool(
                "vote.cast", {"proposal_id": mine, "vote": "approve", "reason_md": "after"}
            )
    assert store.reviews.list(proposal_id=mine)[0] == []
