"""The whole review flow through the real MCP client (``roundtable mcp stdio`` in a subprocess)
and the real CLI, on one project: propose, review, vote, validate, apply, and the paths where a
new patch version voids votes, a veto blocks, the author tries to vote and a vote word is unknown."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from store import ProjectPaths
from tests.helpers import project_snapshot
from tests.store.work_helpers import DIFF, DIFF_V2, seed_files

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def operator(project: ProjectPaths) -> AsyncIterator[Client]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "supervisor", "--root", str(project.root), "mcp", "stdio"],
        env=dict(os.environ),  # the SDK passes only a minimal one; ROUNDTABLE_STORE_URL must reach it
    )
    with anyio.fail_after(120):
        async with Client(params) as client:
            yield client


async def call(client: Client, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(tool, args)
    body: dict[str, Any] | None = result.structured_content
    assert body is not None
    assert json.loads(result.content[0].text) == body  # type: ignore[union-attr]
    assert result.is_error is ("error" in body)
    return body


async def ok(client: Client, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    body = await call(client, tool, args)
    assert "error" not in body, body
    return body


async def refused(client: Client, project: ProjectPaths, tool: str, args: dict[str, Any], code: str) -> None:
    before = project_snapshot(project)
    body = await call(client, tool, args)
    assert body["error"]["code"] == code, body
    assert project_snapshot(project) == before


async def cli(argv: list[str], project: ProjectPaths, *args: str, json_out: bool = True) -> Any:
    """Run the CLI without blocking the event loop the MCP client lives on."""
    extra = ["--json"] if json_out else []
    with anyio.fail_after(60):
        done = await anyio.run_process([*argv, "--root", str(project.root), *args, *extra], check=False)
    if not json_out:
        assert done.returncode == 0, done.stderr
        return done.stdout.decode()
    return json.loads(done.stdout)


@pytest.fixture
def seeded(project: ProjectPaths) -> ProjectPaths:
    seed_files(project.root)
    return project


async def test_consensus_validate_apply_over_mcp(seeded: ProjectPaths) -> None:
    async with operator(seeded) as client:
        tools = {t.name for t in (await client.list_tools()).tools}
        assert {"proposal.create", "vote.cast", "patch.apply", "proposal.timeline"} <= tools
        task = (await ok(client, "task.create", {"title": "Shout", "body_md": "Line two, louder"}))["task"]
        created = await ok(
            client,
            "proposal.create",
            {"task_id": task["id"], "agent_id": "implementer-1", "title": "Loud", "patch": DIFF},
        )
        pid = created["proposal"]["id"]
        review = await ok(client, "proposal.request_review", {"proposal_id": pid})
        assert {c["agent_id"] for c in review["round"]["candidates"]} == {"reviewer-1", "reviewer-2"}
        assert review["round"]["advisory"] == [
            {"agent_id": "memory-oracle-1", "role": "MemoryOracle", "advisory": True, "launched": False}
        ]
        for agent in ("reviewer-1", "reviewer-2"):
            cast = await ok(
                client,
                "vote.cast",
                {"proposal_id": pid, "agent_id": agent, "vote": "approve", "reason_md": "ok"},
            )
        assert cast["proposal_status"] == "accepted" and cast["consensus"]["reached"] is True
        validated = await ok(client, "patch.validate", {"proposal_id": pid})
        assert validated["ok"] is True
        applied = await ok(client, "patch.apply", {"proposal_id": pid})
        assert applied["transaction"]["before_hash"] != applied["transaction"]["after_hash"]
        assert (seeded.root / "hello.txt").read_text() == "one\nTWO\nthree\n"
        timeline = await ok(client, "proposal.timeline", {"proposal_id": pid})
    assert [e["type"] for e in timeline["events"]] == [
        "proposal.created",
        "proposal.patch_attached",
        "proposal.review_requested",
        "vote.cast",
        "vote.cast",
        "proposal.accepted",
        "proposal.apply_started",
        "proposal.applied",
    ]
    assert timeline["events"][1]["patch"]["sha256"] == created["patch"]["sha256"]
    assert all(e["vote"]["patch_version"] == 1 and e["vote"]["counts"] for e in timeline["events"][3:5])


async def test_new_version_veto_author_and_unknown_word_over_mcp_and_cli(
    seeded: ProjectPaths, roundtable_argv: list[str]
) -> None:
    async with operator(seeded) as client:
        task = (await ok(client, "task.create", {"title": "Shout"}))["task"]
        pid = (
            await ok(
                client,
                "proposal.create",
                {"task_id": task["id"], "agent_id": "implementer-1", "title": "Loud", "patch": DIFF},
            )
        )["proposal"]["id"]
        await ok(client, "proposal.request_review", {"proposal_id": pid})
        vote = {"proposal_id": pid, "reason_md": "r"}
        await refused(
            client, seeded, "vote.cast", {**vote, "agent_id": "implementer-1", "vote": "approve"}, "forbidden"
        )
        await refused(
            client,
            seeded,
            "vote.cast",
            {**vote, "agent_id": "reviewer-1", "vote": "yes!"},
            "invalid_argument",
        )
        await refused(
            client,
            seeded,
            "vote.cast",
            {**vote, "agent_id": "memory-oracle-1", "vote": "approve"},
            "forbidden",
        )
        await ok(client, "vote.cast", {**vote, "agent_id": "reviewer-1", "vote": "approve"})
        # The second approval comes from the CLI, on the same project.
        second = ["vote", "cast", pid, "--agent", "reviewer-2", "--vote", "approve", "--reason", "ok"]
        assert (await cli(roundtable_argv, seeded, *second))["proposal_status"] == "accepted"
        attached = await ok(client, "proposal.attach_patch", {"proposal_id": pid, "patch": DIFF_V2})
        assert attached["proposal"]["status"] == "in_review" and len(attached["invalidated_vote_ids"]) == 2
        await refused(client, seeded, "patch.apply", {"proposal_id": pid}, "conflict")
        await ok(client, "vote.cast", {**vote, "agent_id": "reviewer-1", "vote": "approve"})
        vetoed = await ok(client, "vote.cast", {**vote, "agent_id": "reviewer-2", "vote": "veto"})
        assert vetoed["proposal_status"] == "in_review" and vetoed["consensus"]["blocking"]
        await refused(client, seeded, "patch.apply", {"proposal_id": pid}, "conflict")
        # The vetoing reviewer changes their mind: the replacement counts, the veto stays on record.
        final = await ok(
            client, "vote.cast", {**vote, "agent_id": "reviewer-2", "vote": "approve_with_notes"}
        )
        assert final["proposal_status"] == "accepted"
        await ok(client, "patch.apply", {"proposal_id": pid})
    assert (seeded.root / "hello.txt").read_text() == "one\nTWO\nthree\nfour\n"
    timeline = await cli(roundtable_argv, seeded, "timeline", pid)
    events = timeline["events"]
    assert [e["id"] for e in events] == sorted(e["id"] for e in events)
    versions = [e["patch"]["version"] for e in events if e["type"] == "proposal.patch_attached"]
    assert versions == [1, 2]
    votes = [
        (e["vote"]["agent_id"], e["vote"]["vote"], e["vote"]["patch_version"], e["vote"]["counts"])
        for e in events
        if e["type"] == "vote.cast"
    ]
    assert votes == [
        ("reviewer-1", "approve", 1, False),
        ("reviewer-2", "approve", 1, False),
        ("reviewer-1", "approve", 2, True),
        ("reviewer-2", "veto", 2, False),
        ("reviewer-2", "approve_with_notes", 2, True),
    ]
    kinds = [e["type"] for e in events]
    assert kinds.index("proposal.reviews_invalidated") == kinds.index("proposal.patch_attached", 2) + 1
    assert kinds[-2:] == ["proposal.apply_started", "proposal.applied"]
    assert timeline["proposal"]["status"] == "applied"
    text = await cli(roundtable_argv, seeded, "timeline", pid, json_out=False)
    assert "reviews must be renewed" in text and "veto on v2 [does not count]" in text
