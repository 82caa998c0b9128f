"""The quick hand-off path (:mod:`supervisor.cli._quick`): which command lines it takes, and that a
launch handed to a serve imports nothing heavy and prints what the in-process command prints.

The serve here is a stand-in that speaks the hand-off protocol on a real Unix socket, from a thread
of this test process (so the peer check, which wants the announced pid, passes); the real serve and
the real command are compared in ``tests/supervisor/docker/test_warm_pool_docker.py``.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

from supervisor.cli._handoff import SERVE_FILE, STATE_DIR
from supervisor.cli._launch_text import oracle_launch_answer
from supervisor.cli._quick import _parse
from tests.supervisor.cli.test_startup_imports import _PROBE  # runs the command, then lists sys.modules

REPO = Path(__file__).resolve().parents[3]
_PROPOSAL = "P-20260101T000000000000Z-0123456789ab"
_BODY = {"id": "L-1", "status": "exited", "exit_code": 0, "reason": None, "error": None, "warnings": []}
HEAVY = ("store.config", "store.db", "pydantic", "structlog", "anyio", "asyncio", "sqlite3", "docker", "mcp")
SLOW_STDLIB = ("typing", "dataclasses", "inspect", "pathlib", "socket", "selectors")
"""Standard modules the hand-off needs none of, each several milliseconds of start-up on every
launch handed to a serve (``dataclasses`` alone imports ``inspect``, ``ast``, ``dis`` and ``tokenize``)."""


@pytest.mark.parametrize(
    ("argv", "op", "args", "root", "as_json"),
    [
        (["oracle", "launch", "P-1", "--wait"], "oracle.launch", {"timeout": None}, None, False),
        (
            ["--root", "/r", "oracle", "launch", "--wait", "P-1", "--json", "--timeout", "5"],
            "oracle.launch",
            {"timeout": 5.0},
            "/r",
            True,
        ),
        (
            ["oracle", "launch", "P-1", "--wait", "--root=/r", "--timeout=2.5", "-v"],
            "oracle.launch",
            {"timeout": 2.5},
            "/r",
            False,
        ),
        (["review", "run", "P-1", "--wait", "--json"], "review.run", {}, None, True),
    ],
)
def test_the_launch_command_lines_take_the_quick_path(
    argv: list[str], op: str, args: dict[str, Any], root: str | None, as_json: bool
) -> None:
    command = _parse(argv)
    assert command is not None
    expected = {"proposal_id": "P-1", **({"provider": None} if op == "oracle.launch" else {}), **args}
    assert (command.op, command.args, command.root, command.as_json) == (op, expected, root, as_json)


@pytest.mark.parametrize(
    "argv",
    [
        ["oracle", "launch", "P-1"],  # no --wait: the detached run
        ["oracle", "launch", "P-1", "--wait", "--help"],
        ["oracle", "launch", "P-1", "--wai"],  # an abbreviation argparse would take
        ["oracle", "launch", "P-1", "--wait", "--provider", "judge"],
        ["oracle", "launch", "P-1", "--wait", "--timeout", "soon"],
        ["oracle", "launch", "P-1", "--wait", "--timeout", "nan"],
        ["oracle", "launch", "P-1", "--wait", "--timeout"],
        ["oracle", "launch", "P-1", "--wait", "--root", "/a", "--root", "/b"],
        ["oracle", "launch", "P-1", "P-2", "--wait"],
        ["oracle", "launch", "--wait", "--", "P-1"],
        ["review", "run", "P-1", "--wait", "--timeout", "5"],  # review run has no --timeout
        ["oracle", "launch", "P-1", "--wait", "--announce-fd", "3"],
        ["proposal", "get", "P-1", "--wait"],
    ],
)
def test_any_other_command_line_runs_in_full(argv: list[str]) -> None:
    assert _parse(argv) is None


class _FakeServe:
    """A stand-in serve: reads one request, answers ``lines``; remembers the request."""

    started: ClassVar[list[_FakeServe]] = []

    def __init__(self, state_dir: Path, socket_path: Path, lines: list[dict[str, Any]]):
        self.started.append(self)
        self.lines = lines
        self.requests: list[dict[str, Any]] = []
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(str(socket_path))
        socket_path.chmod(0o600)
        self.sock.listen()
        file = state_dir / SERVE_FILE
        file.write_text(json.dumps({"socket": str(socket_path), "pid": os.getpid()}))
        file.chmod(0o600)
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        conn, _ = self.sock.accept()
        with conn, conn.makefile("rwb") as stream:
            self.requests.append(json.loads(stream.readline()))
            for line in self.lines:
                stream.write(json.dumps(line).encode() + b"\n")
            stream.flush()


@pytest.fixture
def project() -> Iterator[Path]:
    base = Path(tempfile.mkdtemp(prefix="rtq-", dir="/tmp"))  # a socket path must be short
    (base / STATE_DIR).mkdir()
    try:
        yield base
    finally:
        for serve in _FakeServe.started:
            serve.sock.close()
        _FakeServe.started.clear()
        shutil.rmtree(base, ignore_errors=True)


def _run(project: Path, *argv: str) -> tuple[int, str, str, list[str]]:
    out = project / "modules.json"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
    }
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, str(out), "", *argv, "--root", str(project)],
        capture_output=True, text=True, timeout=120, check=False, env=env,
    )  # fmt: skip
    report = json.loads(out.read_text(encoding="utf-8"))
    return int(report["code"]), done.stdout, done.stderr, report["modules"]


def test_a_handed_off_launch_imports_nothing_heavy_and_answers_as_in_process(project: Path) -> None:
    lines: list[dict[str, Any]] = [
        {"accepted": True},
        {"phase": "requested", "details": {"launch_id": "L-1"}},
        {"result": _BODY},
    ]
    serve = _FakeServe(project / STATE_DIR, project / "s.sock", lines)
    code, out, err, modules = _run(project, "oracle", "launch", "P-01", "--wait", "--json")
    assert code == 0, err
    assert serve.requests == [
        {"op": "oracle.launch", "args": {"proposal_id": "P-01", "provider": None, "timeout": None}}
    ]
    assert json.loads(out) == oracle_launch_answer(dict(_BODY))
    progress = [json.loads(line) for line in err.splitlines()]
    assert progress == [
        {"phase": "handed_off", "serve_pid": os.getpid()},
        {"launch_id": "L-1", "phase": "requested"},
    ]
    heavy = [m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY)]
    assert heavy == []
    assert [m for m in SLOW_STDLIB if m in modules] == []
    assert "supervisor.cli._main" not in modules  # the parser tree was never built


def test_an_error_before_the_serve_accepts_prints_no_hand_off_and_fails_alike(project: Path) -> None:
    error = {"code": "not_found", "message": f"no proposal {_PROPOSAL}"}
    _FakeServe(project / STATE_DIR, project / "s.sock", [{"error": error}])
    code, out, err, _ = _run(project, "oracle", "launch", _PROPOSAL, "--wait", "--json")
    assert (code, json.loads(out), err) == (1, {"error": error}, "")


def test_a_serve_that_breaks_off_is_an_internal_error(project: Path) -> None:
    _FakeServe(project / STATE_DIR, project / "s.sock", [{"accepted": True}])
    code, out, err, _ = _run(project, "review", "run", _PROPOSAL, "--wait")
    assert code == 1 and out == ""
    assert "error [internal]: roundtable serve" in err and "closed the hand-off mid-launch" in err


def test_with_no_serve_the_full_command_runs(project: Path) -> None:
    (project / STATE_DIR).rmdir()  # no project at all: the full command's own error
    code, out, _err, modules = _run(project, "oracle", "launch", _PROPOSAL, "--wait", "--json")
    assert "supervisor.cli._main" in modules and code == 1
    assert json.loads(out)["error"]["code"] == "not_initialized"
