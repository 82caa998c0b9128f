"""The checks step: checks evaluated exactly, before a provider that does not judge them.

Through the benchmark's fake tools (the step alone), then the real runner in a subprocess over a
real launch socket (no Docker) with ``--provider lexical``: the store's recorded checks reach the
container through ``task.history`` and fail as certain, ``critical`` warnings citing the entry.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio
import pytest

from benchmarks.oracle_quality.fake_tools import FakeOracleTools
from benchmarks.oracle_quality.loader import MemorySpec, Scenario
from capabilities.services import Services
from capabilities.serving import LaunchSocketApp, serve_launch_socket
from roles.providers.checks_step import run_checks
from store import Store
from tests.capabilities.oracle_helpers import build_world

pytestmark = pytest.mark.anyio

NO_PRINT = {"kind": "forbid_added", "pattern": r"\bprint\(", "paths": ["app/"], "message": "Use logging."}
KEEP_TIMEOUT = {"kind": "require_kept", "pattern": r"timeout="}
_ENTRY = MemorySpec("M-out", "constraint", "Output via logging", "No print.", checks=(NO_PRINT, KEEP_TIMEOUT))


def _tools(diff: str, *memory: MemorySpec) -> FakeOracleTools:
    return FakeOracleTools(
        Scenario(
            id="t", klass="keyword", split="dev", language="python", task="T-1", title="t", diff=diff,
            expected=frozenset(), memory=memory or (_ENTRY,), source="test",
        )
    )  # fmt: skip


def _diff(*lines: str, path: str = "app/client.py") -> str:
    return f"--- a/{path}\n+++ b/{path}\n@@ -1,3 +1,3 @@\n import requests\n" + "\n".join(lines) + "\n"


async def test_an_added_forbidden_line_is_a_certain_critical_warning_quoting_it() -> None:
    tools = _tools(_diff('+print("user", user)', "+x = 1"))
    events = await run_checks(tools)
    assert [e["payload"]["cited_memory_ids"] for e in events] == [["M-out"]]
    payload = events[0]["payload"]
    assert payload["severity"] == "critical"
    message = payload["message_md"]
    assert message.startswith("**Certain:") and "confidence 1.00" in message
    assert '`app/client.py:2`: `print("user", user)`' in message and "> Use logging." in message
    assert "x = 1" not in message


async def test_removing_the_forbidden_line_does_not_warn() -> None:
    tools = _tools(_diff('-print("user", user)', '+log.info("user %s", user)'))
    assert await run_checks(tools) == []
    assert tools.warnings == []


async def test_one_warning_per_failed_check() -> None:
    tools = _tools(_diff("-r = get(u, timeout=5)", "+r = get(u)", '+print("r")'))
    events = await run_checks(tools)
    assert len(events) == 2
    kinds = [e["payload"]["message_md"].split("Check `")[1].split("`")[0] for e in events]
    assert kinds == ["forbid_added", "require_kept"]


async def test_paths_scope_the_check_and_entries_without_checks_cost_nothing() -> None:
    assert await run_checks(_tools(_diff('+print("x")', path="scripts/run.py"))) == []
    plain = _tools(_diff('+print("x")'), MemorySpec("M-plain", "decision", "No print", "Never `print(`."))
    assert await run_checks(plain) == []
    assert plain.calls == ["task.history"]  # no patch read when no entry carries checks


async def test_stale_foreign_and_non_governing_entries_are_never_evaluated() -> None:
    stale = MemorySpec("M-s", "constraint", "s", "s", status="stale", checks=(NO_PRINT,))
    foreign = MemorySpec("M-f", "constraint", "f", "f", scope="T-other", checks=(NO_PRINT,))
    assert await run_checks(_tools(_diff('+print("x")'), stale, foreign)) == []


async def _run_runner(store: Store, provider: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    world = build_world(store)
    entry = store.memory.record(
        scope=world.task_id, kind="decision", title="No f-string SQL", body_md="Use the builder.",
        checks=[{"kind": "forbid_added", "pattern": r"execute\(f\"", "paths": ["app/"]},
                {"kind": "require_kept", "pattern": r"builder\.select"}], actor="op",
    )  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="rtc-", dir="/tmp") as tmp:
        socket, token = Path(tmp) / "mcp.sock", Path(tmp) / "token"
        token.write_text(world.token)
        async with serve_launch_socket(LaunchSocketApp(Services(store=store), world.grant_id), socket):
            result = await anyio.run_process(
                [sys.executable, "-m", "roles.runner", "--socket", str(socket), "--token-file", str(token),
                 "--provider", provider], check=False,
            )  # fmt: skip
    assert result.returncode == 0, result.stderr.decode()
    rows = store.db.read(
        lambda conn: conn.execute(
            "SELECT payload FROM events WHERE type = 'memory.oracle_warning' ORDER BY id"
        ).fetchall()
    )
    warnings = [w for w in (json.loads(row["payload"]) for row in rows) if entry.id in w["cited_memory_ids"]]
    return json.loads(result.stdout), warnings


async def test_the_lexical_runner_warns_once_per_failed_check(store: Store) -> None:
    report, warnings = await _run_runner(store, "lexical")
    certain = [w for w in warnings if w["message_md"].startswith("**Certain:")]
    assert len(certain) == 2 and {w["severity"] for w in certain} == {"critical"}
    assert "execute(f" in certain[0]["message_md"] and "builder.select" in certain[1]["message_md"]
    assert report["provider"] == "lexical" and len(report["warnings"]) >= 2


async def test_the_judge_runner_does_not_run_the_step_twice(store: Store) -> None:
    _, warnings = await _run_runner(store, "judge")
    assert not any(w["message_md"].startswith("**Certain:") for w in warnings)
    assert len([w for w in warnings if "executable check" in w["message_md"]]) == 1
