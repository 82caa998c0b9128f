"""Agent credentials through the real MCP client: agent tokens over streamable HTTP against the
served app, and ``roundtable mcp stdio --agent`` as a subprocess.

An agent sees exactly its roster role's toolset (``ACCESS``), acts only as itself (an ``agent_id``
naming another agent is ``forbidden`` and changes nothing), and every event it causes names it as
the actor and its credential (the token's ID over HTTP, ``"local"`` over stdio).
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError
from mcp_types import CallToolResult

from capabilities.auth import issue_agent_token
from capabilities.policy import ACCESS, policy_tool_names
from capabilities.services import Services
from store import ProjectPaths, Store
from store._ids import utc_now
from store.events import LOCAL_CREDENTIAL
from tests.capabilities.api_helpers import running_api
from tests.capabilities.http_helpers import body, mcp_client
from tests.helpers import project_snapshot
from tests.store.work_helpers import DIFF, DIFF_V2, new_task
from tests.test_layout import REPO

pytestmark = pytest.mark.anyio

REVIEWER_TOOLS = frozenset(ACCESS["Reviewer"])
IMPLEMENTER_TOOLS = frozenset(ACCESS["Implementer"])


@dataclass(frozen=True)
class World:
    """A task; implementer-1's proposal under review; implementer-2's proposal (no round)."""

    task_id: str
    proposal_id: str
    other_proposal_id: str


def seed(store: Store) -> World:
    """The operator's set-up, through the store: reviewer-1 and reviewer-2 are candidates."""
    task = new_task(store)
    mine, _ = store.proposals.create(
        task_id=task.id, agent_id="implementer-1", title="Shout line two", patch=DIFF, actor="operator"
    )
    _, review = store.reviews.request_review(proposal_id=mine["id"], actor="operator")
    candidates = {candidate["agent_id"] for candidate in review.to_dict()["candidates"]}
    assert {"reviewer-1", "reviewer-2"} <= candidates
    other, _ = store.proposals.create(
        task_id=task.id, agent_id="implementer-2", title="Someone else's", patch=DIFF, actor="operator"
    )
    return World(task.id, mine["id"], other["id"])


def refused(result: CallToolResult, code: str = "forbidden") -> dict[str, Any]:
    """The structured error of a refused call (``isError``, same JSON in structured and text content)."""
    assert result.is_error, result
    answer = body(result)
    assert answer["error"]["code"] == code, answer
    assert answer["error"]["message"] and "Traceback" not in answer["error"]["message"]
    error: dict[str, Any] = answer["error"]
    return error


def answered(result: CallToolResult) -> dict[str, Any]:
    """The structured answer of a call that succeeded."""
    answer = body(result)
    assert not result.is_error, answer
    return answer


def events_of(store: Store, proposal_id: str, type_: str) -> list[dict[str, Any]]:
    """The proposal's timeline events of one type, oldest first."""
    events: list[dict[str, Any]] = store.timeline.timeline(proposal_id)["events"]
    return [event for event in events if event["type"] == type_]


def vote_rows(store: Store, proposal_id: str) -> list[tuple[str, str]]:
    """``(agent_id, vote)`` of every vote on record for the proposal."""
    votes, _ = store.reviews.list(proposal_id=proposal_id)
    return [(vote.agent_id, vote.vote) for vote in votes]


def cast_args(proposal_id: str, **extra: Any) -> dict[str, Any]:
    return {"proposal_id": proposal_id, "vote": "approve", "reason_md": "Looks right.", **extra}


def operator_only_calls(world: World) -> list[tuple[str, dict[str, Any]]]:
    """Calls that are outside every roster agent's toolset (decisions, reject, apply)."""
    pid = world.proposal_id
    return [
        ("patch.apply", {"proposal_id": pid}),
        ("patch.reject", {"proposal_id": pid, "reason_md": "No."}),
        ("decision.record", {"outcome": "rejected", "rationale_md": "No.", "proposal_id": pid}),
    ]


# -- reviewer -------------------------------------------------------------------------------------


async def reviewer_session(client: Client, store: Store, project: ProjectPaths, world: World) -> None:
    """What a reviewer-1 session may and may not do (the same on every transport)."""
    pid = world.proposal_id
    tools = {tool.name for tool in (await client.list_tools()).tools}
    assert tools == REVIEWER_TOOLS

    before = project_snapshot(project)
    message = refused(await client.call_tool("vote.cast", cast_args(pid, agent_id="reviewer-2")))
    assert "reviewer-2" in message["message"]
    for name, arguments in operator_only_calls(world):
        refused(await client.call_tool(name, arguments))
    assert project_snapshot(project) == before
    assert vote_rows(store, pid) == []
    assert events_of(store, pid, "vote.cast") == []

    # Reads are in its toolset.
    assert answered(await client.call_tool("proposal.get", {"proposal_id": pid}))["proposal"]["id"] == pid

    # Omitting agent_id, or naming itself, votes as itself.
    cast = answered(await client.call_tool("vote.cast", cast_args(pid)))
    assert cast["vote"]["agent_id"] == "reviewer-1"
    itself = cast_args(pid, agent_id="reviewer-1", vote="revise")
    again = answered(await client.call_tool("vote.cast", itself))
    assert again["vote"]["agent_id"] == "reviewer-1"
    assert vote_rows(store, pid) == [("reviewer-1", "approve"), ("reviewer-1", "revise")]


async def test_a_reviewer_token_over_streamable_http(
    services: Services, store: Store, project: ProjectPaths
) -> None:
    world = seed(store)
    issued = issue_agent_token(store, name="r1", agent_id="reviewer-1", actor="operator")
    async with running_api(services) as api, mcp_client(api.address, issued.token) as client:
        await reviewer_session(client, store, project, world)
    votes = events_of(store, world.proposal_id, "vote.cast")
    assert len(votes) == 2
    for event in votes:
        assert event["actor"] == "reviewer-1"
        assert event["credential_id"] == issued.record.id
        assert event["payload"]["agent_id"] == "reviewer-1"


async def test_a_reviewer_token_is_refused_every_tool_outside_its_toolset(
    services: Services, store: Store, project: ProjectPaths
) -> None:
    world = seed(store)
    issued = issue_agent_token(store, name="r1", agent_id="reviewer-1", actor="operator")
    outside = [*sorted(frozenset(ACCESS["operator"]) - REVIEWER_TOOLS), "oracle.warn", "task.history"]
    async with running_api(services) as api, mcp_client(api.address, issued.token) as client:
        before = project_snapshot(project)  # running_api mints its operator token first
        for name in outside:
            # The policy refuses before the arguments are even parsed.
            refused(await client.call_tool(name, {"proposal_id": world.proposal_id}))
        assert project_snapshot(project) == before


async def test_a_revoked_or_expired_agent_token_is_refused_on_the_next_call(
    services: Services, store: Store, project: ProjectPaths
) -> None:
    world = seed(store)
    revoked = issue_agent_token(store, name="r1", agent_id="reviewer-1", actor="operator")
    short = issue_agent_token(store, name="r2", agent_id="reviewer-2", actor="operator", ttl_seconds=60)
    async with running_api(services) as api:
        async with mcp_client(api.address, revoked.token) as client:
            assert not (await client.call_tool("proposal.get", {"proposal_id": world.proposal_id})).is_error
            store.grants.revoke_token(revoked.record.id, actor="operator")
            before = project_snapshot(project)
            with pytest.raises(MCPError):
                await client.call_tool("vote.cast", cast_args(world.proposal_id))
            assert project_snapshot(project) == before
        async with mcp_client(api.address, short.token) as client:
            assert not (await client.call_tool("proposal.get", {"proposal_id": world.proposal_id})).is_error
            # Expiry comes from moving the store's clock, never from waiting.
            store.grants.clock = lambda: utc_now() + timedelta(seconds=61)
            with pytest.raises(MCPError):
                await client.call_tool("vote.cast", cast_args(world.proposal_id))
    assert vote_rows(store, world.proposal_id) == []


# -- implementer ----------------------------------------------------------------------------------


async def implementer_session(client: Client, store: Store, project: ProjectPaths, world: World) -> None:
    """What an implementer-1 session may and may not do (the same on every transport)."""
    tools = {tool.name for tool in (await client.list_tools()).tools}
    assert tools == IMPLEMENTER_TOOLS

    new = {"task_id": world.task_id, "title": "Another go", "patch": DIFF}
    before = project_snapshot(project)
    refused(await client.call_tool("proposal.create", {**new, "agent_id": "implementer-2"}))
    # Implementers do not vote, not even on their own proposal.
    refused(await client.call_tool("vote.cast", cast_args(world.proposal_id)))
    refused(await client.call_tool("vote.cast", cast_args(world.proposal_id, agent_id="implementer-1")))
    foreign = {"proposal_id": world.other_proposal_id, "patch": DIFF_V2}
    refused(await client.call_tool("proposal.attach_patch", foreign))
    refused(await client.call_tool("proposal.request_review", {"proposal_id": world.other_proposal_id}))
    for name, arguments in operator_only_calls(world):
        refused(await client.call_tool(name, arguments))
    assert project_snapshot(project) == before
    assert store.proposals.get(world.other_proposal_id)["current_version"] == 1

    created = answered(await client.call_tool("proposal.create", new))
    assert created["proposal"]["agent_id"] == "implementer-1"
    assert store.proposals.get(created["proposal"]["id"])["agent_id"] == "implementer-1"
    attached = answered(
        await client.call_tool("proposal.attach_patch", {"proposal_id": world.proposal_id, "patch": DIFF_V2})
    )
    assert attached["patch"]["version"] == 2
    assert store.proposals.get(world.proposal_id)["current_version"] == 2


async def test_an_implementer_token_over_streamable_http(
    services: Services, store: Store, project: ProjectPaths
) -> None:
    world = seed(store)
    issued = issue_agent_token(store, name="i1", agent_id="implementer-1", actor="operator")
    async with running_api(services) as api, mcp_client(api.address, issued.token) as client:
        await implementer_session(client, store, project, world)
    (attached,) = events_of(store, world.proposal_id, "proposal.patch_attached")[-1:]
    assert (attached["actor"], attached["credential_id"]) == ("implementer-1", issued.record.id)
    created = [
        proposal
        for proposal in store.proposals.list(task_id=world.task_id)[0]
        if proposal["id"] not in (world.proposal_id, world.other_proposal_id)
    ]
    assert [proposal["agent_id"] for proposal in created] == ["implementer-1"]
    (event,) = events_of(store, created[0]["id"], "proposal.created")
    assert (event["actor"], event["credential_id"]) == ("implementer-1", issued.record.id)


async def test_an_implementer_token_records_and_replaces_only_its_own_memory(
    services: Services, store: Store, project: ProjectPaths
) -> None:
    decision = store.memory.record(
        scope="project", kind="decision", title="Keep v1", body_md="Decided.", actor="operator"
    )
    mine = issue_agent_token(store, name="i1", agent_id="implementer-1", actor="operator")
    theirs = issue_agent_token(store, name="i2", agent_id="implementer-2", actor="operator")
    note = {"scope": "project", "kind": "fact", "title": "Cursor paging", "body_md": "Opaque cursors."}
    async with running_api(services) as api:
        async with mcp_client(api.address, mine.token) as client:
            entry = answered(await client.call_tool("memory.record", note))["entry"]
            replaced = answered(
                await client.call_tool("memory.record", {**note, "memory_id": entry["id"], "body_md": "v2"})
            )["entry"]
            assert (replaced["id"], replaced["body_md"], replaced["status"]) == (entry["id"], "v2", "active")
            before = project_snapshot(project)
            # Not the operator's decision, no lifecycle state of its own, no curation.
            refused(await client.call_tool("memory.record", {**note, "memory_id": decision.id}))
            refused(await client.call_tool("memory.record", {**note, "status": "archived"}))
            refused(
                await client.call_tool("memory.record", {**note, "memory_id": entry["id"], "status": "stale"})
            )
            refused(
                await client.call_tool("memory.mark_stale", {"memory_id": entry["id"], "reason_md": "old"})
            )
            assert project_snapshot(project) == before
        async with mcp_client(api.address, theirs.token) as client:
            refused(await client.call_tool("memory.record", {**note, "memory_id": entry["id"]}))
            assert project_snapshot(project) == before
    assert store.memory.get(decision.id).body_md == "Decided."
    assert store.memory.get(entry["id"]).body_md == "v2"

    def writers(conn: sqlite3.Connection) -> dict[str, str]:
        rows = conn.execute("SELECT id, written_by FROM memory_entries").fetchall()
        return {str(row[0]): str(row[1]) for row in rows}

    assert store.db.read(writers) == {decision.id: "operator:operator", entry["id"]: "agent:implementer-1"}
    recorded = [e for e in store.event_feed.after(0, limit=500) if e.type.startswith("memory.")]
    assert {(e.actor, e.credential_id) for e in recorded if e.payload.get("memory_id") == entry["id"]} == {
        ("implementer-1", mine.record.id)
    }


# -- stdio ------------------------------------------------------------------------------------------


def stdio_argv(project: ProjectPaths, agent: str) -> list[str]:
    return ["-m", "supervisor", "--root", str(project.root), "mcp", "stdio", "--agent", agent]


@asynccontextmanager
async def agent_stdio(project: ProjectPaths, agent: str) -> AsyncIterator[Client]:
    """A real MCP client on ``roundtable mcp stdio --agent AGENT`` in a subprocess."""
    # The SDK hands the server only a minimal environment unless told; ROUNDTABLE_STORE_URL must reach it.
    params = StdioServerParameters(
        command=sys.executable, args=stdio_argv(project, agent), env=dict(os.environ)
    )
    with anyio.fail_after(60):
        async with Client(params) as client:
            yield client


async def test_mcp_stdio_as_reviewer_1(store: Store, project: ProjectPaths) -> None:
    world = seed(store)
    async with agent_stdio(project, "reviewer-1") as client:
        await reviewer_session(client, store, project, world)
    votes = events_of(store, world.proposal_id, "vote.cast")
    assert [(event["actor"], event["credential_id"]) for event in votes] == [
        ("reviewer-1", LOCAL_CREDENTIAL),
        ("reviewer-1", LOCAL_CREDENTIAL),
    ]


async def test_mcp_stdio_as_implementer_1(store: Store, project: ProjectPaths) -> None:
    world = seed(store)
    async with agent_stdio(project, "implementer-1") as client:
        await implementer_session(client, store, project, world)
    (attached,) = events_of(store, world.proposal_id, "proposal.patch_attached")[-1:]
    assert (attached["actor"], attached["credential_id"]) == ("implementer-1", LOCAL_CREDENTIAL)


@pytest.mark.parametrize(
    ("agent", "says"),
    [("nobody", "not in the [agents] roster"), ("memory-oracle-1", "MemoryOracle")],
)
def test_mcp_stdio_refuses_an_agent_that_cannot_act(project: ProjectPaths, agent: str, says: str) -> None:
    before = project_snapshot(project)
    as_json = subprocess.run(
        [sys.executable, *stdio_argv(project, agent), "--json"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert as_json.returncode == 1, (as_json.stdout, as_json.stderr)
    error = json.loads(as_json.stdout)
    assert set(error) == {"error"}
    assert error["error"]["code"] == "invalid_argument"
    assert agent in error["error"]["message"] and says in error["error"]["message"]
    plain = subprocess.run(
        [sys.executable, *stdio_argv(project, agent)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert plain.returncode == 1
    assert agent in plain.stderr and says in plain.stderr
    assert plain.stdout == ""  # nothing that an MCP client could mistake for a server
    assert project_snapshot(project) == before


# -- the published table ---------------------------------------------------------------------------

_ROW = re.compile(r"^\|(.+)\|\s*$")


def _table(text: str) -> tuple[list[str], dict[str, list[str]]]:
    """The header cells and the rows (by the backticked tool name in the first cell) of the first
    Markdown table whose header names a roster role."""
    header: list[str] = []
    rows: dict[str, list[str]] = {}
    for line in text.splitlines():
        found = _ROW.match(line.strip())
        if found is None:
            if header and rows:
                break
            continue
        cells = [cell.strip() for cell in found.group(1).split("|")]
        if not header:
            if any(role in cells for role in ("Implementer", "Reviewer")):
                header = cells
            continue
        name = re.search(r"`([a-z_]+\.[a-z_]+)`", cells[0])
        if name is not None:
            rows[name.group(1)] = cells
    return header, rows


def test_the_role_by_tool_table_is_published_in_docs() -> None:
    page = REPO / "docs" / "agents.md"
    assert page.is_file(), f"{page} is missing"
    header, rows = _table(page.read_text(encoding="utf-8"))
    assert header, "no role-by-tool table in docs/agents.md"
    columns = {role: header.index(role) for role in ACCESS if role in header}
    assert set(columns) == set(ACCESS), (header, sorted(ACCESS))
    assert set(rows) == set(policy_tool_names())
    for tool, cells in rows.items():
        for role, column in columns.items():
            reach = ACCESS[role].get(tool)
            cell = cells[column].strip("` ")
            assert (cell == str(reach)) if reach is not None else cell not in {"any", "own", "bound"}, (
                tool,
                role,
                cell,
            )
