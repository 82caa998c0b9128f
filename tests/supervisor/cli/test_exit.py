"""How the ``roundtable`` process ends: a command that loaded the servers or Docker skips the
interpreter's teardown of its modules (slow, and useless at exit), and still does what an exit must:
join non-daemon threads, run ``atexit`` handlers, flush stdout whole, keep the exit status."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]

# A module-level object whose finaliser runs only in the interpreter's teardown.
_SCRIPT = """
import atexit, queue, sys, threading
{preload}
class Finalised:
    def __del__(self):
        sys.stderr.write("teardown ran\\n")
witness = Finalised()
atexit.register(lambda: print("atexit ran"))
# A worker that ends only when the exit's thread-shutdown callbacks run (concurrent.futures
# registers its own the same way), and must then be joined before the process ends.
items = queue.Queue()
worker = threading.Thread(target=lambda: print("thread got", items.get()))
worker.start()
threading._register_atexit(items.put, "its item")
print("x" * 200_000)
sys.argv = ["roundtable", "--root", sys.argv[1], "no-such-command"]
from supervisor.cli._main import run
run()
"""


def _run(preload: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-c", _SCRIPT.format(preload=preload), str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize("preload", ["import mcp", "import docker"])
def test_a_heavy_command_exits_without_teardown_and_loses_nothing(preload: str, tmp_path: Path) -> None:
    done = _run(preload, tmp_path)
    assert done.returncode == 2  # the usage error's status
    lines = done.stdout.splitlines()
    assert "x" * 200_000 in lines and "atexit ran" in lines and "thread got its item" in lines
    assert lines.index("thread got its item") < lines.index("atexit ran")
    assert "teardown ran" not in done.stderr


def test_a_light_command_exits_normally(tmp_path: Path) -> None:
    done = _run("", tmp_path)
    assert done.returncode == 2
    assert "atexit ran" in done.stdout.splitlines()
    assert "teardown ran" in done.stderr
