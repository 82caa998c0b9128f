"""``roundtable memory record --checks JSON`` and the checks in ``memory query``: real subprocesses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.capabilities.mcp.test_memory_checks_mcp import BAD, TLS
from tests.supervisor.cli.test_cli_memory import _json, _run, workdir

__all__ = ["workdir"]  # the fixture, imported for these tests

_RECORD = tuple("memory record --scope project --kind decision --title TLS --body-md On.".split())


def test_record_with_checks_and_query_shows_them(workdir: Path, roundtable_argv: list[str]) -> None:
    recorded = _run(roundtable_argv, *_RECORD, "--checks", json.dumps([TLS]), "--json", cwd=workdir)
    assert recorded.returncode == 0, recorded.stderr
    assert _json(recorded)["entry"]["checks"] == [TLS]
    _run(roundtable_argv, "memory", "record", "--scope", "project", "--kind", "fact", "--title", "Plain",
         "--body-md", "tls", cwd=workdir)  # fmt: skip
    human = _run(roundtable_argv, "memory", "query", "tls", cwd=workdir)
    assert human.returncode == 0, human.stderr
    lines = human.stdout.splitlines()
    assert lines[1:3] == ["    checks: 1", r"    - forbid_added: verify\s*=\s*False"], human.stdout
    assert "Plain" in lines[3] and len(lines) == 4  # an entry without checks shows no checks line


@pytest.mark.parametrize(("fields", "problem"), BAD)
def test_bad_checks_are_refused(
    workdir: Path, roundtable_argv: list[str], fields: dict[str, object], problem: str
) -> None:
    kind = str(fields.get("kind", "decision"))
    argv = [*_RECORD[:5], kind, *_RECORD[6:], "--checks", json.dumps(fields["checks"]), "--json"]
    refused = _run(roundtable_argv, *argv, cwd=workdir)
    assert refused.returncode == 1
    error = _json(refused)["error"]
    assert error["code"] == "invalid_argument" and problem in error["message"], error
    every = _run(roundtable_argv, "memory", "query", "--json", cwd=workdir)
    assert _json(every)["entries"] == []


def test_checks_that_are_not_json_are_invalid_argument(workdir: Path, roundtable_argv: list[str]) -> None:
    refused = _run(roundtable_argv, *_RECORD, "--checks", "[{kind:", cwd=workdir)
    assert refused.returncode == 1 and "invalid_argument" in refused.stderr and "--checks" in refused.stderr


@pytest.mark.parametrize("depth", [50_000, 65], ids=["recursion-error", "past-the-limit"])
def test_deeply_nested_checks_are_invalid_argument(
    workdir: Path, roundtable_argv: list[str], depth: int
) -> None:
    nested = "[" * depth + "]" * depth  # json.loads raises RecursionError, not ValueError, at 50,000
    refused = _run(roundtable_argv, *_RECORD, "--checks", nested, "--json", cwd=workdir)
    assert refused.returncode == 1, refused.stderr
    error = _json(refused)["error"]
    assert error == {"code": "invalid_argument", "message": "--checks is nested more than 64 levels deep"}
    assert "Traceback" not in refused.stderr
    assert _json(_run(roundtable_argv, "memory", "query", "--json", cwd=workdir))["entries"] == []
