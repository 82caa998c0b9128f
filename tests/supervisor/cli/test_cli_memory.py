"""``roundtable init`` and ``roundtable memory ...`` as a user runs them: real subprocesses."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest


def _run(argv: list[str], *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*argv, *args], cwd=cwd, capture_output=True, text=True, timeout=60, check=False)


def _json(result: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(result.stdout)
    return body


@pytest.fixture
def workdir(tmp_path: Path, roundtable_argv: list[str]) -> Path:
    result = _run(roundtable_argv, "init", "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert _json(result)["created"] is True
    return tmp_path


def test_memory_commands_mirror_the_tools(workdir: Path, roundtable_argv: list[str]) -> None:
    recorded = _run(
        roundtable_argv,
        "memory",
        "record",
        "--scope",
        "project",
        "--kind",
        "decision",
        "--title",
        "Use the builder",
        "--body-md",
        "aaaa",
        "--importance",
        "0",
        "--json",
        cwd=workdir,
    )
    assert recorded.returncode == 0, recorded.stderr
    entry = _json(recorded)["entry"]
    assert entry["importance"] == 50 and entry["source_event_id"] == 0

    sub = workdir / "deeper" / "dir"
    sub.mkdir(parents=True)
    queried = _run(roundtable_argv, "memory", "query", "aa", "--json", cwd=sub)  # root found like git
    assert [e["score"] for e in _json(queried)["entries"]] == [2]

    every = _run(roundtable_argv, "--json", "memory", "query", "--limit", "0", cwd=workdir)
    assert len(_json(every)["entries"]) == 1

    summary = _run(roundtable_argv, "memory", "summarize", "--scope", "project", "--json", cwd=workdir)
    assert _json(summary)["entry_count"] == 1

    human = _run(roundtable_argv, "memory", "summarize", cwd=workdir)
    assert human.stdout.startswith("## Memory summary: project")

    stale = _run(
        roundtable_argv, "memory", "mark-stale", entry["id"], "--reason", "superseded", "--json", cwd=workdir
    )
    assert _json(stale)["entry"]["status"] == "stale"


def test_errors_are_structured_with_exit_codes(
    workdir: Path, tmp_path: Path, roundtable_argv: list[str]
) -> None:
    missing = _run(roundtable_argv, "memory", "mark-stale", "M-nope", "--reason", "x", "--json", cwd=workdir)
    assert missing.returncode == 1
    assert _json(missing) == {"error": {"code": "not_found", "message": "memory entry M-nope does not exist"}}

    usage = _run(roundtable_argv, "memory", "record", "--json", cwd=workdir)
    assert usage.returncode == 2
    assert _json(usage)["error"]["code"] == "invalid_argument"

    blank = _run(
        roundtable_argv,
        "memory",
        "record",
        "--scope",
        " ",
        "--kind",
        "k",
        "--title",
        "t",
        "--body",
        "b",
        "--json",
        cwd=workdir,
    )
    assert blank.returncode == 1 and _json(blank)["error"]["code"] == "invalid_argument"
    assert "Traceback" not in blank.stderr

    elsewhere = tmp_path.parent / f"{tmp_path.name}-empty"
    elsewhere.mkdir()
    not_init = _run(roundtable_argv, "memory", "query", "x", "--json", cwd=elsewhere)
    assert not_init.returncode == 1 and _json(not_init)["error"]["code"] == "not_initialized"

    human = _run(roundtable_argv, "memory", "query", "x", cwd=elsewhere)
    assert human.returncode == 1 and human.stdout == "" and "not_initialized" in human.stderr


def test_root_flag_anywhere(workdir: Path, tmp_path: Path, roundtable_argv: list[str]) -> None:
    other = tmp_path.parent / f"{tmp_path.name}-other"
    other.mkdir()
    for argv in (
        ["--root", str(workdir), "memory", "query", "--json"],
        ["memory", "--root", str(workdir), "query", "--json"],
        ["memory", "query", "--root", str(workdir), "--json"],
    ):
        result = _run(roundtable_argv, *argv, cwd=other)
        assert result.returncode == 0, (argv, result.stdout, result.stderr)
        assert _json(result) == {"entries": []}
