"""What goes into the role image: the build inputs, their snapshot, their hash and the wheelhouse.

The role image carries the ``roles`` package and what it needs at run time, nothing else of
Roundtable. Its inputs are exactly:

* every file under ``roles/`` (bytecode and caches excluded), subpackages included;
* ``deploy/role/pyproject.toml``, the ``roundtable-role`` distribution those files are wheeled as;
* ``deploy/Dockerfile`` and ``deploy/role/check.py``, the image build and its build-time check;
* the version, written as the distribution's ``VERSION`` file, and the base image reference.

:func:`snapshot_inputs` copies them into a build context, hashing the bytes it copies, so the
``roundtable.source-hash`` label covers exactly what the image was built from;
:func:`source_hash` computes the same digest without copying. :func:`build_wheels` builds the
wheelhouse from the snapshot on the host.
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Iterator
from pathlib import Path

from supervisor.image._common import Progress, run_streaming

__all__ = ["ROLE_PROJECT", "build_wheels", "snapshot_inputs", "source_hash"]

ROLE_PROJECT = "role"
"""The directory of the build context holding the ``roundtable-role`` project (then removed)."""

_PACKAGE = "roles"
# Each single-file input: its path in the checkout, and its path in the build context.
_FILES = (
    ("deploy/Dockerfile", "Dockerfile"),
    ("deploy/role/check.py", "check.py"),
    ("deploy/role/pyproject.toml", f"{ROLE_PROJECT}/pyproject.toml"),
)
_VERSION_FILE = f"{ROLE_PROJECT}/VERSION"
_SKIPPED_PARTS = frozenset({"__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache"})
_SKIPPED_SUFFIXES = frozenset({".pyc", ".pyo"})
_MISSING = b"\0missing"


def source_hash(repo_root: Path, base: str, *, version: str | None = None) -> str:
    """A SHA-256 over every build input under ``repo_root``, the ``base`` reference and the version.

    ``version`` defaults to the installed roundtable version, which the image is tagged with. Each
    file is hashed with its path in the checkout, in sorted order; a missing file hashes as missing.
    Nothing outside the inputs (the other packages, ``tests/``, the top-level ``pyproject.toml``)
    changes the hash.
    """
    return _digest(repo_root, base, _version(version), into=None)


def snapshot_inputs(repo_root: Path, context: Path, base: str, *, version: str | None = None) -> str:
    """Copy the build inputs into the build context ``context`` and return their hash.

    The hash is :func:`source_hash` of the bytes copied, so the image is labelled with what it is
    built from even while the checkout is being edited. The ``roundtable-role`` project lands in
    ``context/role`` (its ``pyproject.toml``, ``VERSION`` and ``roles/``), the Dockerfile and the
    check beside it.
    """
    return _digest(repo_root, base, _version(version), into=context)


def build_wheels(project: Path, wheels: Path, progress: Progress) -> None:
    """Build roundtable-role from ``project``, its dependencies, mcp's and pip into ``wheels``.

    ``project[mcp]`` resolves mcp together with everything it declares, so every version in the
    wheelhouse agrees with mcp's pins; the Dockerfile then installs only what the runner loads.
    """
    progress(f"wheels: building roundtable-role and its dependencies with {sys.executable} -m pip")
    argv = [sys.executable, "-m", "pip", "wheel", "--quiet", "--disable-pip-version-check"]
    run_streaming(
        [*argv, "--wheel-dir", str(wheels), f"{project}[mcp]", "pip"],
        "building wheels (pip wheel)",
        progress,
        prefix="wheels:",
    )
    progress(f"wheels: {sum(1 for _ in wheels.glob('*.whl'))} wheels ready")


def _digest(repo_root: Path, base: str, version: str, *, into: Path | None) -> str:
    """Hash (and, with ``into``, copy) every input; the one loop both public functions share."""
    digest = hashlib.sha256(f"base\0{base}\0".encode())
    inputs: list[tuple[str, str, bytes]] = [("VERSION", _VERSION_FILE, f"{version}\n".encode())]
    inputs.extend((rel, dest, _read(repo_root / rel)) for rel, dest in _input_paths(repo_root))
    for rel, dest, content in sorted(inputs):
        digest.update(f"{rel}\0{len(content)}\0".encode())
        digest.update(content)
        if into is not None and content != _MISSING:
            target = into / dest
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content)
    return digest.hexdigest()


def _input_paths(repo_root: Path) -> Iterator[tuple[str, str]]:
    """(path in the checkout, path in the build context) of every input file."""
    yield from _FILES
    package = repo_root / _PACKAGE
    for path in package.rglob("*"):
        rel = path.relative_to(repo_root)
        if (
            path.is_file()
            and path.suffix not in _SKIPPED_SUFFIXES
            and not _SKIPPED_PARTS.intersection(rel.parts)
            and not any(part.endswith(".egg-info") for part in rel.parts)
        ):
            yield rel.as_posix(), f"{ROLE_PROJECT}/{rel.as_posix()}"


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return _MISSING


def _version(version: str | None) -> str:
    if version is not None:
        return version
    from importlib.metadata import version as installed

    return installed("roundtable")
