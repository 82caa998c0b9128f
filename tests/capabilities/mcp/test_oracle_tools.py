"""The MemoryOracle's six tools over the real MCP client, on a launch's Unix socket and on TCP."""

from __future__ import annotations

import hashlib
import os
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from capabilities.policy import MEMORY_ORACLE_TOOLS
from capabilities.services import Services
from capabilities.serving._transports import BoundAddress, build_asgi_app, build_launch_app, serving
from store import OracleStore, Store
from store._ids import new_id, utc_now_iso
from store.errors import InvalidArgument, Unauthenticated
from store.events._log import append_event, list_events
from store.patches._artifacts import patch_relative_path
from tests.capabilities.http_helpers import body, mcp_client
from tests.capabilities.oracle_helpers import DIFF, OracleWorld, build_world
from tests.helpers import project_snapshot
from tests.store.patches.artifact_helpers import tamper

pytestmark = pytest.mark.anyio

REFUSED_WRITES: list[tuple[str, dict[str, Any]]] = [
    (
        "vote.cast",
        {"proposal_id": "{P}", "agent_id": "memory-oracle-1", "vote": "approve", "reason_md": "ok"},
    ),
    ("proposal.create", {"task_id": "{T}", "agent_id": "implementer-1", "title": "x", "patch": DIFF}),
    ("proposal.attach_patch", {"proposal_id": "{P}", "patch": DIFF}),
    ("proposal.request_review", {"proposal_id": "{P}"}),
    ("decision.record", {"proposal_id": "{P}", "outcome": "accepted", "rationale_md": "lgtm"}),
    ("patch.apply", {"proposal_id": "{P}"}),
    ("patch.reject", {"proposal_id": "{P}", "reason_md": "no"}),
    ("memory.mark_stale", {"memory_id": "{M}", "reason_md": "gone"}),
    ("task.create", {"title": "mine now"}),
]


@pytest.fixture
def world(store: Store) -> OracleWorld:
    return build_world(store)


@pytest.fixture(params=["uds-launch", "tcp"])
async def client(
    request: pytest.FixtureRequest, services: Services, world: OracleWorld, tmp_path: Path
) -> AsyncIterator[Client]:
    """An oracle MCP session: on its launch's socket (launch-bound app) or on the TCP service."""
    where: dict[str, Any]
    if request.param == "uds-launch":
        app, where = build_launch_app(services, world.grant_id), {"uds": str(tmp_path / "launch.sock")}
    else:
        app, where = build_asgi_app(services), {"host": "127.0.0.1"}
    address: BoundAddress
    async with serving(app, **where) as address, mcp_client(address, world.token) as session:
        yield session


async def call(client: Client, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(name, arguments)
    answer = body(result)
    assert result.is_error == ("error" in answer)
    return answer


async def test_the_oracle_lists_exactly_six_tools(client: Client) -> None:
    tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert set(tools) == MEMORY_ORACLE_TOOLS
    assert len(tools) == 6
    for name in ("task.history", "patch.inspect", "memory.query", "memory.summarize"):
        annotations = tools[name].annotations
        assert annotations is not None and annotations.read_only_hint
    warn = tools["oracle.warn"].input_schema
    assert set(warn["required"]) == {"message_md", "cited_memory_ids"}
    assert warn["properties"]["severity"]["enum"] == ["info", "warning", "critical"]
    assert "max_bytes" in tools["patch.inspect"].input_schema["properties"]


async def test_task_history_within_scope(client: Client, world: OracleWorld) -> None:
    history = await call(client, "task.history", {})
    assert history["task"]["id"] == world.task_id
    assert history["proposal"]["id"] == world.proposal_id
    assert [p["id"] for p in history["proposals"]] == [world.proposal_id]
    assert history["decisions"] == []
    ids = [event["id"] for event in history["events"]]
    assert ids == sorted(ids, reverse=True)
    assert {event["task_id"] for event in history["events"]} <= {world.task_id, None}
    assert all(
        event["task_id"] == world.task_id or event["proposal_id"] == world.proposal_id
        for event in history["events"]
    )
    assert world.foreign_event not in ids
    memories = {entry["id"] for entry in history["memories"]}
    assert memories == {world.task_memory, world.project_memory}  # not stale, not foreign
    # Each entry is the memory tools' own projection of it, field for field (what memory.query
    # answers, less the query's score).
    queried = (await call(client, "memory.query", {"query": "", "limit": 0}))["entries"]
    projections = {entry["id"]: {k: v for k, v in entry.items() if k != "score"} for entry in queried}
    assert history["memories"] == [projections[entry["id"]] for entry in history["memories"]]
    assert history["truncated"] == {
        "proposals": False,
        "decisions": False,
        "events": False,
        "memories": False,
    }
    # Naming its own task or proposal is fine; another is forbidden.
    assert "error" not in await call(client, "task.history", {"task_id": world.task_id})
    refused = await call(client, "task.history", {"task_id": world.foreign_task_id})
    assert refused["error"]["code"] == "forbidden"
    refused = await call(client, "task.history", {"proposal_id": world.foreign_proposal_id})
    assert refused["error"]["code"] == "forbidden"


async def test_patch_inspect_reads_the_current_version(client: Client, world: OracleWorld) -> None:
    patch = await call(client, "patch.inspect", {})
    data = DIFF.encode()
    assert patch == {
        "proposal_id": world.proposal_id,
        "version": 1,
        "sha256": hashlib.sha256(data).hexdigest(),
        "size_bytes": len(data),
        "content": DIFF,
        "truncated": False,
        "files": ["app/db.py"],
    }
    short = await call(client, "patch.inspect", {"max_bytes": 10})
    assert short["content"] == DIFF[:10]
    assert short["truncated"] is True
    assert short["size_bytes"] == len(data)
    for bad in (0, -1, 1_048_577):
        refused = await call(client, "patch.inspect", {"max_bytes": bad})
        assert refused["error"]["code"] == "invalid_argument"
    refused = await call(client, "patch.inspect", {"proposal_id": world.foreign_proposal_id})
    assert refused["error"]["code"] == "forbidden"


async def test_patch_inspect_refuses_a_tampered_or_symlinked_artifact(
    client: Client, world: OracleWorld, store: Store, tmp_path: Path
) -> None:
    _, original = store.proposals.patch(world.proposal_id, 1)
    tamper(store, world.proposal_id, 1, original.replace(b"SELECT", b"DELETE"))  # the file, or the blob
    assert (await call(client, "patch.inspect", {}))["error"]["code"] == "artifact_mismatch"
    tamper(store, world.proposal_id, 1, original)
    assert "error" not in await call(client, "patch.inspect", {})
    if store.db.backend == "postgresql":
        return  # no file to swap: a PostgreSQL store keeps the bytes in its patch_blobs table
    # The proposal's directory swapped for a symlink to an identical copy: still refused.
    path = store.paths.root.joinpath(*patch_relative_path(world.proposal_id, 1))
    directory = path.parent
    copy = tmp_path / "copy"
    copy.mkdir()
    (copy / path.name).write_bytes(original)
    directory.rename(tmp_path / "moved")
    os.symlink(copy, directory)
    assert (await call(client, "patch.inspect", {}))["error"]["code"] == "unsafe_path"


async def test_memory_tools_within_scope(client: Client, world: OracleWorld, store: Store) -> None:
    found = await call(client, "memory.query", {"query": ""})
    assert {entry["id"] for entry in found["entries"]} == {
        world.task_memory,
        world.project_memory,
        world.stale_memory,
    }
    assert (await call(client, "memory.query", {"scope": world.foreign_task_id}))["error"][
        "code"
    ] == "forbidden"
    recorded = await call(
        client,
        "memory.record",
        {"scope": world.task_id, "kind": "summary", "title": "Oracle notes", "body_md": "Checked SQL."},
    )
    entry = recorded["entry"]
    assert entry["source_proposal_id"] == world.proposal_id
    assert entry["scope"] == world.task_id
    # It may revise its own entry, but not the operator's decisions.
    revised = await call(
        client,
        "memory.record",
        {"scope": "project", "kind": "summary", "title": "Notes", "body_md": "v2", "memory_id": entry["id"]},
    )
    assert revised["entry"]["revision"] == 2
    before = project_snapshot(store.paths)
    refused = await call(
        client,
        "memory.record",
        {
            "scope": world.task_id,
            "kind": "decision",
            "title": "x",
            "body_md": "y",
            "memory_id": world.task_memory,
        },
    )
    assert refused["error"]["code"] == "forbidden"
    assert project_snapshot(store.paths) == before
    summary = await call(client, "memory.summarize", {})
    assert {e["id"] for e in summary["entries"]} == {world.task_memory, world.project_memory, entry["id"]}
    assert (await call(client, "memory.summarize", {"task_id": world.foreign_task_id}))["error"]["code"] == (
        "forbidden"
    )


async def test_oracle_warn_writes_one_event_with_the_contract_payload(
    client: Client, world: OracleWorld, store: Store
) -> None:
    history = await call(client, "task.history", {})
    cited_event = history["events"][-1]["id"]
    answer = await call(
        client,
        "oracle.warn",
        {
            "message_md": "This patch adds raw SQL; **decision** says builder only.",
            "cited_memory_ids": [world.task_memory, world.project_memory, world.task_memory],
            "cited_event_ids": [cited_event],
            "severity": "critical",
        },
    )
    event = answer["event"]
    assert event["type"] == "memory.oracle_warning"
    assert event["actor"] == "memory-oracle-1"
    assert event["task_id"] == world.task_id
    assert event["proposal_id"] == world.proposal_id
    patch_sha = hashlib.sha256(DIFF.encode()).hexdigest()
    assert event["payload"] == {
        "proposal_id": world.proposal_id,
        "task_id": world.task_id,
        "patch_version": 1,
        "patch_sha256": patch_sha,
        "message_md": "This patch adds raw SQL; **decision** says builder only.",
        "severity": "critical",
        "cited_memory_ids": [world.task_memory, world.project_memory],
        "cited_event_ids": [cited_event],
        "grant_id": world.grant_id,
        "launch_id": "L-test",
    }
    stored = store.db.read(lambda conn: list_events(conn, types=("memory.oracle_warning",)))
    assert [e.id for e in stored] == [event["id"]]
    default = await call(
        client, "oracle.warn", {"message_md": "fyi", "cited_memory_ids": [world.project_memory]}
    )
    assert default["event"]["payload"]["severity"] == "warning"
    assert default["event"]["payload"]["cited_event_ids"] == []


async def test_oracle_warn_refuses_bad_citations_and_writes_nothing(
    client: Client, world: OracleWorld, store: Store
) -> None:
    before = project_snapshot(store.paths)
    cases: list[tuple[dict[str, Any], str]] = [
        ({"cited_memory_ids": [world.stale_memory]}, "invalid_citation"),
        ({"cited_memory_ids": ["M-does-not-exist"]}, "invalid_citation"),
        ({"cited_memory_ids": [world.foreign_memory]}, "invalid_citation"),
        ({"cited_memory_ids": [world.task_memory, world.foreign_memory]}, "invalid_citation"),
        ({"cited_memory_ids": []}, "invalid_citation"),
        (
            {"cited_memory_ids": [world.task_memory], "cited_event_ids": [world.foreign_event]},
            "invalid_citation",
        ),
        ({"cited_memory_ids": [world.task_memory], "cited_event_ids": [10**9]}, "invalid_citation"),
        ({}, "invalid_argument"),
        ({"cited_memory_ids": [world.task_memory], "severity": "meh"}, "invalid_argument"),
        ({"cited_memory_ids": [world.task_memory], "proposal_id": world.foreign_proposal_id}, "forbidden"),
        ({"cited_memory_ids": [world.task_memory], "task_id": world.foreign_task_id}, "forbidden"),
    ]
    for extra, code in cases:
        refused = await call(client, "oracle.warn", {"message_md": "conflict", **extra})
        assert refused["error"]["code"] == code, (extra, refused)
    blank = await call(client, "oracle.warn", {"message_md": "  ", "cited_memory_ids": [world.task_memory]})
    assert blank["error"]["code"] == "invalid_argument"
    assert project_snapshot(store.paths) == before


@pytest.mark.parametrize(("tool", "template"), REFUSED_WRITES, ids=[name for name, _ in REFUSED_WRITES])
async def test_work_mutations_are_refused_to_the_oracle(
    client: Client, world: OracleWorld, store: Store, tool: str, template: dict[str, Any]
) -> None:
    names = {t.name for t in (await client.list_tools()).tools}
    assert tool not in names
    names_by_marker = {"{P}": world.proposal_id, "{T}": world.task_id, "{M}": world.task_memory}
    arguments = {key: names_by_marker.get(value, value) for key, value in template.items()}
    before = project_snapshot(store.paths)
    refused = await call(client, tool, arguments)
    assert refused["error"]["code"] == "forbidden"
    assert project_snapshot(store.paths) == before


# -- truncation --------------------------------------------------------------------------------


def _fill(
    store: Store, world: OracleWorld, *, proposals: int, decisions: int, memories: int, events: int
) -> None:
    """Bring each of T's four lists to exactly the given size, straight in the tables."""

    def write(conn: sqlite3.Connection) -> None:
        now = utc_now_iso()
        have = conn.execute("SELECT count(*) FROM proposals WHERE task_id = ?", (world.task_id,)).fetchone()[
            0
        ]
        for _ in range(proposals - have):
            conn.execute(
                "INSERT INTO proposals (id, task_id, agent_id, title, created_by, created_at, updated_at)"
                " VALUES (?, ?, 'implementer-1', 'filler', 'op', ?, ?)",
                (new_id("proposal"), world.task_id, now, now),
            )
        have = conn.execute("SELECT count(*) FROM decisions WHERE task_id = ?", (world.task_id,)).fetchone()[
            0
        ]
        for _ in range(decisions - have):
            conn.execute(
                "INSERT INTO decisions (id, task_id, outcome, rationale_md, decided_by, created_at)"
                " VALUES (?, ?, 'noted', 'filler', 'op', ?)",
                (new_id("decision"), world.task_id, now),
            )
        have = conn.execute(
            "SELECT count(*) FROM memory_entries WHERE status = 'active' AND scope IN (?, 'project')",
            (world.task_id,),
        ).fetchone()[0]
        for index in range(memories - have):
            conn.execute(
                "INSERT INTO memory_entries (id, scope, kind, title, body_md, created_at, updated_at,"
                " lc_title, lc_body, lc_scope, lc_kind) VALUES (?, 'project', 'fact', ?, 'b', ?, ?, ?, 'b',"
                " 'project', 'fact')",
                (new_id("memory"), f"filler {index}", now, now, f"filler {index}"),
            )
        have = conn.execute(
            "SELECT count(*) FROM events WHERE task_id = ? OR proposal_id IN"
            " (SELECT id FROM proposals WHERE task_id = ?)",
            (world.task_id, world.task_id),
        ).fetchone()[0]
        for _ in range(events - have):
            append_event(conn, "test.filler", actor="op", task_id=world.task_id)

    store.db.write(write)


async def test_truncation_flags_flip_at_101_per_list_independently(
    client: Client, world: OracleWorld, store: Store
) -> None:
    _fill(store, world, proposals=100, decisions=100, memories=100, events=100)
    history = await call(client, "task.history", {})
    lists = ("proposals", "decisions", "events", "memories")
    assert {name: len(history[name]) for name in lists} == dict.fromkeys(lists, 100)
    assert history["truncated"] == dict.fromkeys(lists, False)
    flipped: dict[str, bool] = dict.fromkeys(lists, False)
    sizes = dict.fromkeys(lists, 100)
    for name in lists:
        sizes[name] = 101
        _fill(store, world, **sizes)
        flipped[name] = True
        history = await call(client, "task.history", {})
        assert history["truncated"] == flipped, name
        assert all(len(history[other]) == 100 for other in lists)
    ids = [event["id"] for event in history["events"]]
    assert ids == sorted(ids, reverse=True)


# -- the write re-checks the grant -------------------------------------------------------------


def test_a_revoked_grant_cannot_warn_even_after_authentication(store: Store) -> None:
    world = build_world(store)
    grant = world.principal.grant
    assert grant is not None and grant.revoked_at is None
    oracle = OracleStore(store.db, store.config)
    store.grants.revoke(world.grant_id, actor="op")
    before = project_snapshot(store.paths)
    with pytest.raises(Unauthenticated):
        oracle.warn(grant, message_md="late", cited_memory_ids=[world.task_memory])
    assert project_snapshot(store.paths) == before


async def test_oracle_warn_writes_confidence_and_evidence_into_the_payload(
    client: Client, world: OracleWorld
) -> None:
    evidence = [{"path": "app/db.py", "line": 2, "text": '    return conn.execute(f"SELECT * FROM users")'}]
    answer = await call(
        client,
        "oracle.warn",
        {
            "message_md": "raw SQL",
            "cited_memory_ids": [world.task_memory],
            "confidence": 0.87,
            "evidence": evidence,
        },
    )
    payload = answer["event"]["payload"]
    assert payload["confidence"] == 0.87
    assert payload["evidence"] == evidence
    assert payload["message_md"] == "raw SQL"
    assert payload["cited_memory_ids"] == [world.task_memory]
    certain = await call(
        client, "oracle.warn", {"message_md": "x", "cited_memory_ids": [world.task_memory], "confidence": 1}
    )
    assert certain["event"]["payload"]["confidence"] == 1.0
    assert "evidence" not in certain["event"]["payload"]


async def test_oracle_warn_advertises_confidence_and_evidence(client: Client) -> None:
    tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    properties = tools["oracle.warn"].input_schema["properties"]
    assert {"confidence", "evidence"} <= set(properties)
    assert set(tools["oracle.warn"].input_schema["required"]) == {"message_md", "cited_memory_ids"}


async def test_oracle_warn_refuses_bad_evidence_and_writes_nothing(
    client: Client, world: OracleWorld, store: Store
) -> None:
    before = project_snapshot(store.paths)
    line = {"path": "app/db.py", "line": 2, "text": "x"}
    cases: list[dict[str, Any]] = [
        {"evidence": [{**line, "path": "other.txt"}]},
        {"evidence": [{**line, "path": "../app/db.py"}]},
        {"evidence": [{**line, "line": 0}]},
        {"evidence": [{**line, "line": 2**63}]},
        {"evidence": [{**line, "text": "y" * 10_000}]},
        {"evidence": [{**line, "text": "\x1b[2J"}]},
        {"evidence": [line] * 21},
        {"evidence": [{"path": "app/db.py", "line": 2}]},
        {"evidence": [{**line, "extra": 1}]},
        {"confidence": 1.5},
        {"confidence": -0.1},
        {"confidence": True},
        {"confidence": "high"},
    ]
    for extra in cases:
        refused = await call(
            client,
            "oracle.warn",
            {"message_md": "conflict", "cited_memory_ids": [world.task_memory], **extra},
        )
        assert refused["error"]["code"] == "invalid_argument", (extra, refused)
    assert project_snapshot(store.paths) == before
    twenty = await call(
        client,
        "oracle.warn",
        {"message_md": "conflict", "cited_memory_ids": [world.task_memory], "evidence": [line] * 20},
    )
    assert len(twenty["event"]["payload"]["evidence"]) == 20


def test_the_store_refuses_bad_evidence_directly(store: Store, world: OracleWorld) -> None:
    oracle = OracleStore(store.db, store.config)
    grant = world.principal.grant
    assert grant is not None
    before = project_snapshot(store.paths)
    for evidence in (
        "app/db.py:2",
        [["app/db.py", 2, "x"]],
        [{"path": "app/db.py", "line": 1.5, "text": "x"}],
        [{"path": "", "line": 1, "text": "x"}],
        [{"path": "nope.py", "line": 1, "text": "x"}],
    ):
        with pytest.raises(InvalidArgument):
            oracle.warn(grant, message_md="m", cited_memory_ids=[world.task_memory], evidence=evidence)
    for confidence in (float("nan"), float("inf"), 2):
        with pytest.raises(InvalidArgument):
            oracle.warn(grant, message_md="m", cited_memory_ids=[world.task_memory], confidence=confidence)
    assert project_snapshot(store.paths) == before
