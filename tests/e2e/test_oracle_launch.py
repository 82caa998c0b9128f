"""The MemoryOracle end to end: the supervisor, a real container, the lexical provider, the timeline."""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import sys
from dataclasses import replace
from typing import Any

import anyio
import pytest

from capabilities.auth import Authenticator
from store import Store, Unauthenticated
from store.launches._store import LaunchStatus
from store.patches import get_version
from supervisor._supervisor import Supervisor
from supervisor.launch._spec import LABEL_LAUNCH, LaunchSpec
from tests.e2e.conftest import ReviewScene
from tests.store.patches.artifact_helpers import tamper

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

_PYTHON = "/opt/roundtable/venv/bin/python"


def _rows(store: Store, sql: str, *params: Any) -> list[sqlite3.Row]:
    return store.db.read(lambda conn: conn.execute(sql, params).fetchall())


def _assert_cleaned_up(store: Store, docker_sdk: Any, launch_id: str) -> None:
    """Grant revoked, container gone, runtime directory removed."""
    grants = _rows(store, "SELECT revoked_at FROM capability_grants WHERE launch_id = ?", launch_id)
    assert grants, "the launch had no grant"
    assert all(row["revoked_at"] for row in grants)
    assert docker_sdk.containers.list(all=True, filters={"label": f"{LABEL_LAUNCH}={launch_id}"}) == []


def _hang(spec: LaunchSpec) -> LaunchSpec:
    return replace(spec, entrypoint=(_PYTHON, "-c", "import time\nwhile True: time.sleep(60)"), command=())


async def test_lexical_oracle_warns_citing_the_decision(
    scene: ReviewScene, store: Store, docker_sdk: Any, role_image_tag: str
) -> None:
    before_status = store.proposals.get(scene.proposal_id)["status"]
    async with Supervisor(store) as supervisor:
        with anyio.fail_after(120):
            result = await supervisor.launch_role("memory_oracle", scene.proposal_id, provider="lexical")

    assert result.launch.status is LaunchStatus.EXITED, result.launch.to_dict(with_log=True)
    assert result.launch.exit_code == 0
    warnings = _rows(store, "SELECT * FROM events WHERE type = 'memory.oracle_warning'")
    assert len(warnings) == 1
    payload = json.loads(warnings[0]["payload"])
    assert payload["cited_memory_ids"] == [scene.decision_id]
    proposal = store.proposals.get(scene.proposal_id)
    assert payload["proposal_id"] == scene.proposal_id
    assert payload["task_id"] == scene.task_id
    assert payload["patch_version"] == 1
    assert payload["patch_sha256"] == proposal["patch"]["sha256"]
    assert payload["launch_id"] == result.launch.id
    assert payload["severity"] == "warning"
    assert "heuristic" in payload["message_md"]
    assert payload["confidence"] == 0.3  # a word match says it is a weak signal
    assert payload["evidence"] and all(item["path"] == "app/users.py" for item in payload["evidence"])
    assert [w.id for w in result.warnings] == [warnings[0]["id"]]

    summaries = _rows(
        store,
        "SELECT * FROM memory_entries WHERE scope = ? AND kind = 'summary' AND source_proposal_id = ?",
        scene.task_id,
        scene.proposal_id,
    )
    assert len(summaries) == 1
    assert scene.decision_id in summaries[0]["body_md"]

    # Advisory only: no vote, no decision, no state change.
    assert _rows(store, "SELECT * FROM votes") == []
    assert _rows(store, "SELECT * FROM decisions") == []
    assert proposal["status"] == before_status
    _assert_cleaned_up(store, docker_sdk, result.launch.id)

    timeline = store.timeline.timeline(scene.proposal_id)
    types = [event["type"] for event in timeline["events"]]
    expected = [
        "proposal.created",
        "proposal.review_requested",
        "role.launch_requested",
        "capability.granted",
        "role.started",
        "memory.recorded",
        "memory.oracle_warning",
        "capability.revoked",
        "role.exited",
    ]
    positions = [types.index(name) for name in expected]
    assert positions == sorted(positions), types
    warning = next(e for e in timeline["events"] if e["type"] == "memory.oracle_warning")
    assert warning["cited_memories"][0]["title"] == "All SQL goes through the query builder"


async def test_a_crashing_role_is_recorded_failed_and_cleaned_up(
    scene: ReviewScene, store: Store, docker_sdk: Any, role_image_tag: str
) -> None:
    # Tamper with the stored patch (its file, or its blob on PostgreSQL): patch.inspect refuses it
    # and the runner exits non-zero.
    version = store.db.read(lambda conn: get_version(conn, scene.proposal_id, 1))
    tamper(store, scene.proposal_id, 1, store.patches.read_verified(version) + b"+tampered\n")
    async with Supervisor(store) as supervisor:
        with anyio.fail_after(120):
            result = await supervisor.launch_role("memory_oracle", scene.proposal_id)
    assert result.launch.status is LaunchStatus.FAILED
    assert result.launch.reason == "provider_failed"  # exit 4, the gateway saw nothing (issue 12)
    assert "artifact_mismatch" in (result.launch.log_tail or "")
    assert result.warnings == []
    _assert_cleaned_up(store, docker_sdk, result.launch.id)


async def test_a_role_past_its_deadline_is_killed(
    scene: ReviewScene, store: Store, docker_sdk: Any, role_image_tag: str
) -> None:
    async with Supervisor(store, spec_transform=_hang) as supervisor:
        with anyio.fail_after(120):
            result = await supervisor.launch_role("memory_oracle", scene.proposal_id, timeout=3)
    assert result.launch.status is LaunchStatus.TIMEOUT
    _assert_cleaned_up(store, docker_sdk, result.launch.id)


async def test_cancelling_the_launch_kills_and_removes_the_container(
    scene: ReviewScene, store: Store, docker_sdk: Any, role_image_tag: str
) -> None:
    running = anyio.Event()

    def on_phase(phase: str, details: dict[str, Any]) -> None:
        if phase == "running":
            running.set()

    async with Supervisor(store, spec_transform=_hang) as supervisor:
        with anyio.fail_after(120):
            async with anyio.create_task_group() as tg:
                tg.start_soon(
                    lambda: supervisor.launch_role("memory_oracle", scene.proposal_id, on_phase=on_phase)
                )
                await running.wait()
                tg.cancel_scope.cancel()
    (launch,) = store.launches.find(proposal_id=scene.proposal_id)
    assert launch.status is LaunchStatus.CANCELLED
    _assert_cleaned_up(store, docker_sdk, launch.id)


async def test_output_flood_is_bounded(
    scene: ReviewScene, store: Store, docker_sdk: Any, role_image_tag: str
) -> None:
    flood = "import sys\nline = 'x' * 1023 + '\\n'\nfor _ in range(20_000): sys.stdout.write(line)\n"

    def transform(spec: LaunchSpec) -> LaunchSpec:
        return replace(spec, entrypoint=(_PYTHON, "-c", flood), command=())

    async with Supervisor(store, spec_transform=transform) as supervisor:
        with anyio.fail_after(120):
            result = await supervisor.launch_role("memory_oracle", scene.proposal_id)
    assert result.launch.status is LaunchStatus.EXITED
    assert 0 < len((result.launch.log_tail or "").encode()) <= 64 * 1024
    _assert_cleaned_up(store, docker_sdk, result.launch.id)


async def test_the_token_is_dead_after_the_launch(
    scene: ReviewScene, store: Store, docker_sdk: Any, role_image_tag: str
) -> None:
    seen: list[str] = []

    def capture(spec: LaunchSpec) -> LaunchSpec:
        seen.extend(spec.redact)
        assert not any(token in value for token in spec.redact for value in spec.environment.values())
        return spec

    async with Supervisor(store, spec_transform=capture) as supervisor:
        with anyio.fail_after(120):
            result = await supervisor.launch_role("memory_oracle", scene.proposal_id)
    (token,) = seen
    with pytest.raises(Unauthenticated):
        await Authenticator(store).authenticate(token)
    events_before = _rows(store, "SELECT count(*) FROM events")[0][0]
    assert result.launch.status is LaunchStatus.EXITED
    # The raw token is nowhere in the database file, its WAL, or the events.
    for path in (scene.paths.database, scene.paths.database.with_name("roundtable.db-wal")):
        if path.exists():
            assert token.encode() not in path.read_bytes()
    assert _rows(store, "SELECT count(*) FROM events")[0][0] == events_before


async def test_requesting_review_launches_nothing(scene: ReviewScene, store: Store) -> None:
    assert store.launches.find(proposal_id=scene.proposal_id) == []
    review = _rows(store, "SELECT payload FROM events WHERE type = 'proposal.review_requested'")
    assert '"launched": false' in review[0]["payload"]


def _oracle_launch(scene: ReviewScene, *extra: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "supervisor", "--root", str(scene.paths.root), "oracle", "launch"]
    argv += [scene.proposal_id, "--wait", "--provider", "judge", "--timeout", "120", *extra]
    return subprocess.run(argv, capture_output=True, text=True, timeout=180, check=False)


async def test_oracle_launch_wait_prints_each_warning_whole(
    scene: ReviewScene, store: Store, docker_sdk: Any, role_image_tag: str
) -> None:
    text = await anyio.to_thread.run_sync(_oracle_launch, scene)
    assert text.returncode == 0, (text.stdout, text.stderr)
    out = text.stdout
    assert "exited (exit code 0), 1 warning(s)" in out, out
    assert re.search(r"- \[(warning|critical)\] confidence (0\.\d\d|1\.00)\n", out), out
    assert "Possible conflict with decision" in out  # the message, not only its citation
    # The quoted patch line, as path:line  text, and the cited entry with its title.
    assert "app/users.py:3      cursor.execute(f\"SELECT * FROM users WHERE name = '{name}'\")" in out, out
    assert f"{scene.decision_id}  All SQL goes through the query builder" in out
    assert "\x1b" not in out

    as_json = await anyio.to_thread.run_sync(_oracle_launch, scene, "--json")
    assert as_json.returncode == 0, as_json.stderr
    body = json.loads(as_json.stdout)
    assert {"id", "status", "exit_code", "warnings"} <= set(body["launch"])
    [warning] = body["launch"]["warnings"]
    payload = warning["payload"]
    assert payload["cited_memory_ids"] == [scene.decision_id]
    assert 0.62 <= payload["confidence"] <= 1.0
    assert {"path": "app/users.py", "line": 3, "text": payload["evidence"][0]["text"]} in payload["evidence"]
    assert "SELECT * FROM users" in payload["evidence"][0]["text"]
    assert warning["cited_memories"] == [
        {"id": scene.decision_id, "title": "All SQL goes through the query builder", "status": "active"}
    ]
