"""structlog loads without rich once ``store`` is imported, and rich still loads for whoever wants it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

_REPO = Path(__file__).resolve().parents[2]
_PROBE = """
import sys
import store
import structlog
assert "rich" not in sys.modules, "structlog imported rich"
assert structlog.dev.rich is None
structlog.get_logger("probe").info("plain", n=1)
import rich.console  # still importable afterwards, by schemathesis say
assert sys.modules["rich"] is not None
print("ok")
"""


def test_structlog_loads_without_rich_and_rich_still_loads() -> None:
    pytest.importorskip("rich")  # installed by the dev extra (schemathesis): the case to prove
    done = subprocess.run(
        [sys.executable, "-c", _PROBE], capture_output=True, text=True, cwd=_REPO, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "ok"


def test_nothing_changes_when_structlog_is_already_loaded() -> None:
    pytest.importorskip("rich")
    probe = "import structlog, sys; import store; print(structlog.dev.rich is not None)"
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, cwd=_REPO, check=True
    )
    assert done.stdout.strip() == "True"
