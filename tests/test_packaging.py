"""``make``'s install step is quiet: ``pip install --quiet -e .`` prints nothing.

It used to print setuptools' "Editable installation ... folders with the same name" warning block:
with no ``package-dir``, setuptools chose its import-hook finder, whose warning pip shows even with
``--quiet``. The test installs a copy of the project, editable, into a fresh empty virtualenv with
the same pip the Makefile uses (the dependencies are left out: ``--no-deps``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

pytestmark = pytest.mark.slow


def test_an_editable_install_prints_no_warning_block(tmp_path: Path) -> None:
    copy = tmp_path / "roundtable"
    copy.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO_ROOT / name, copy / name)
    for package in ("supervisor", "store", "capabilities", "roles"):
        shutil.copytree(REPO_ROOT / package, copy / package, ignore=shutil.ignore_patterns("__pycache__"))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    ran = subprocess.run(
        [
            *(sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python")),
            *("install", "--quiet", "--disable-pip-version-check", "--no-deps", "-e", str(copy)),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout == "" and ran.stderr == "", ran.stderr
    # And it is a working editable install: the copy is what the new interpreter imports.
    where = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import store.errors; print(store.errors.__file__)"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        cwd=tmp_path,
        env={key: value for key, value in os.environ.items() if key != "PYTHONPATH"},
    )
    assert where.stdout.strip() == str(copy / "store" / "errors.py")
