"""The role image's build inputs (what goes in, its hash, its snapshot) and its offline base's mirror.

No Docker: these read and copy files, and run ``deploy/build-base.sh --print-source``.
"""

from __future__ import annotations

import os
import subprocess
from importlib.metadata import version
from pathlib import Path

import pytest

from supervisor.image._build import role_image_tag
from supervisor.image._inputs import snapshot_inputs, source_hash

REPO_ROOT = Path(__file__).resolve().parents[3]
BUILD_BASE = REPO_ROOT / "deploy" / "build-base.sh"


def _fake_checkout(root: Path) -> Path:
    for name in ("supervisor", "roles", "capabilities", "store", "deploy/role"):
        (root / name).mkdir(parents=True)
        (root / name / "__init__.py").write_text(f"# {name}\n")
    (root / "roles" / "runner.py").write_text("# runner\n")
    (root / "pyproject.toml").write_text("[project]\nname = 'roundtable'\n")
    (root / "README.md").write_text("# roundtable\n")
    (root / "deploy" / "Dockerfile").write_text("FROM scratch\n")
    (root / "deploy" / "role" / "pyproject.toml").write_text("[project]\nname = 'roundtable-role'\n")
    (root / "deploy" / "role" / "check.py").write_text("# check\n")
    return root


def test_source_hash_is_stable_and_ignores_caches(tmp_path: Path) -> None:
    root = _fake_checkout(tmp_path)
    first = source_hash(root, "base@1")
    (root / "roles" / "__pycache__").mkdir()
    (root / "roles" / "__pycache__" / "runner.cpython-311.pyc").write_bytes(b"\0")
    (root / "store" / "x.pyc").write_bytes(b"\0")
    (root / "tests").mkdir()
    (root / "tests" / "test_x.py").write_text("")
    assert source_hash(root, "base@1") == first


# What the image carries changes the hash; what it does not carry leaves it alone.
_INPUTS = (
    "roles/runner.py",
    "roles/providers/judge/__init__.py",  # a new subpackage, named nowhere in the build
    "roles/providers/judge/prompt.md",
    "deploy/Dockerfile",
    "deploy/role/pyproject.toml",
    "deploy/role/check.py",
)
_NOT_INPUTS = (
    "store/__init__.py",
    "supervisor/__init__.py",
    "capabilities/__init__.py",
    "tests/fakes/docker_engine.py",
    "pyproject.toml",
    "README.md",
    "deploy/build-base.sh",
)


@pytest.mark.parametrize(
    ("change", "is_input"),
    [*((name, True) for name in _INPUTS), *((name, False) for name in _NOT_INPUTS)],
)
def test_source_hash_follows_the_inputs_only(tmp_path: Path, change: str, is_input: bool) -> None:
    root = _fake_checkout(tmp_path)
    before = source_hash(root, "base@1")
    (root / change).parent.mkdir(parents=True, exist_ok=True)
    (root / change).write_text("changed\n")
    assert (source_hash(root, "base@1") != before) is is_input


def test_source_hash_follows_the_version(tmp_path: Path) -> None:
    root = _fake_checkout(tmp_path)
    assert source_hash(root, "base@1", version="1.0") != source_hash(root, "base@1", version="1.1")


def test_snapshot_is_exactly_what_is_hashed(tmp_path: Path) -> None:
    root = _fake_checkout(tmp_path / "checkout")
    (root / "roles" / "providers" / "judge").mkdir(parents=True)
    (root / "roles" / "providers" / "judge" / "judge.py").write_text("# judge\n")
    (root / "roles" / "__pycache__").mkdir()
    (root / "roles" / "__pycache__" / "runner.cpython-311.pyc").write_bytes(b"\0")
    context = tmp_path / "context"
    digest = snapshot_inputs(root, context, "base@1", version="1.0")
    assert digest == source_hash(root, "base@1", version="1.0")
    copied = sorted(p.relative_to(context).as_posix() for p in context.rglob("*") if p.is_file())
    assert copied == [
        "Dockerfile",
        "check.py",
        "role/VERSION",
        "role/pyproject.toml",
        "role/roles/__init__.py",
        "role/roles/providers/judge/judge.py",
        "role/roles/runner.py",
    ]
    assert (context / "role" / "VERSION").read_text() == "1.0\n"


def test_source_hash_follows_the_base(tmp_path: Path) -> None:
    root = _fake_checkout(tmp_path)
    assert source_hash(root, "roundtable-base:bookworm@sha256:a") != source_hash(
        root, "roundtable-base:bookworm@sha256:b"
    )


def test_role_image_tag_names_the_installed_version() -> None:
    assert role_image_tag() == f"roundtable-role:{version('roundtable')}"


def _print_source(apt_etc: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(BUILD_BASE), "--print-source"],
        env={**os.environ, "APT_ETC": str(apt_etc)},
        capture_output=True,
        text=True,
        check=False,
    )


def test_base_mirror_comes_from_deb822_sources(tmp_path: Path) -> None:
    (tmp_path / "sources.list.d").mkdir()
    (tmp_path / "sources.list.d" / "debian.sources").write_text(
        "Types: deb-src\nURIs: http://src.example/debian\nSuites: bookworm\nComponents: main\n\n"
        "Types: deb\nEnabled: no\nURIs: http://off.example/debian\nSuites: bookworm\nComponents: main\n\n"
        "# the security archive is not the main one\n"
        "Types: deb\nURIs: http://sec.example/debian-security\nSuites: bookworm-security\n"
        "Components: main\n\n"
        "Types: deb\nURIs: http://mirror.example/debian\nSuites: bookworm-updates bookworm\n"
        "Components: main contrib\n"
    )
    proc = _print_source(tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["http://mirror.example/debian", "bookworm"]


def test_base_mirror_falls_back_to_sources_list(tmp_path: Path) -> None:
    (tmp_path / "sources.list").write_text(
        "# deb http://commented.example/debian trixie main\n"
        "deb [signed-by=/k.gpg] http://mirror.example/debian trixie-updates main\n"
        "deb http://ftp.example/debian trixie main non-free-firmware\n"
    )
    proc = _print_source(tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["http://ftp.example/debian", "trixie"]


def test_base_mirror_missing_is_a_clear_error(tmp_path: Path) -> None:
    proc = _print_source(tmp_path)
    assert proc.returncode == 1
    assert "no Debian main archive" in proc.stderr
