"""``roundtable oracle feedback`` and ``roundtable oracle stats`` as a user runs them: subprocesses."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import pytest

from store import append_event, find_project_root, open_store
from tests.capabilities.api_helpers import seed_review
from tests.store.feedback.helpers import stats_row


def _run(argv: list[str], *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*argv, *args], cwd=cwd, capture_output=True, text=True, timeout=60, check=False)


@pytest.fixture
def warnings(tmp_path: Path, roundtable_argv: list[str]) -> tuple[Path, int, int]:
    """A project with a warning of unknown provenance and one from a ``judge`` launch."""
    assert _run(roundtable_argv, "init", "--json", cwd=tmp_path).returncode == 0
    store = open_store(find_project_root(tmp_path))
    try:
        seeded = seed_review(store)
        launch = store.launches.request(
            role="memory_oracle",
            agent_id="memory-oracle-1",
            proposal_id=seeded["proposal_id"],
            image="img:1",
            provider="judge",
        )

        def warn(conn: sqlite3.Connection) -> int:
            payload = {"message_md": "again", "severity": "warning", "launch_id": launch.id}
            event = append_event(
                conn,
                "memory.oracle_warning",
                actor="memory-oracle-1",
                proposal_id=seeded["proposal_id"],
                payload=payload,
            )
            return event.id

        judged = store.db.write(warn)
    finally:
        store.close()
    return tmp_path, seeded["warning_event_id"], judged


def test_feedback_then_stats(warnings: tuple[Path, int, int], roundtable_argv: list[str]) -> None:
    root, unknown, judged = warnings
    given = _run(
        roundtable_argv,
        "oracle",
        "feedback",
        str(judged),
        "--verdict",
        "confirmed",
        "--reason",
        "right",
        "--json",
        cwd=root,
    )
    assert given.returncode == 0, given.stderr
    event = json.loads(given.stdout)["event"]
    assert event["type"] == "memory.oracle_feedback"
    assert event["payload"] == {
        "warning_event_id": judged,
        "verdict": "confirmed",
        "reason": "right",
        "proposal_id": event["proposal_id"],
        "task_id": None,
        "launch_id": event["payload"]["launch_id"],
        "provider": "judge",
    }
    text = _run(roundtable_argv, "oracle", "feedback", str(unknown), "--verdict", "dismissed", cwd=root)
    assert text.returncode == 0, text.stderr
    assert f"warning {unknown} dismissed" in text.stdout

    stats = _run(roundtable_argv, "oracle", "stats", "--json", cwd=root)
    assert stats.returncode == 0, stats.stderr
    providers: list[dict[str, Any]] = json.loads(stats.stdout)["providers"]
    assert providers == [
        stats_row("judge", 1, 1, 0, 0, 1.0),
        stats_row("unknown", 1, 0, 1, 0, 0.0),
    ]
    table = _run(roundtable_argv, "oracle", "stats", cwd=root)
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert lines[0].split() == ["provider", "warnings", "confirmed", "dismissed", "unreviewed", "precision"]
    assert lines[1].split() == ["judge", "1", "1", "0", "0", "1.00"]
    assert lines[2].split() == ["unknown", "1", "0", "1", "0", "0.00"]


def test_refusals(warnings: tuple[Path, int, int], roundtable_argv: list[str]) -> None:
    root, _, _ = warnings
    missing = _run(
        roundtable_argv, "oracle", "feedback", "999999", "--verdict", "confirmed", "--json", cwd=root
    )
    assert missing.returncode != 0
    assert json.loads(missing.stdout)["error"]["code"] == "not_found"
    wrong = _run(roundtable_argv, "oracle", "feedback", "1", "--verdict", "dismissed", "--json", cwd=root)
    assert wrong.returncode != 0
    assert json.loads(wrong.stdout)["error"]["code"] == "invalid_argument"
    bad = _run(roundtable_argv, "oracle", "feedback", "1", "--verdict", "maybe", cwd=root)
    assert bad.returncode == 2  # argparse refuses it
    empty = _run(roundtable_argv, "oracle", "stats", cwd=root)
    assert empty.returncode == 0 and "unreviewed" in empty.stdout
