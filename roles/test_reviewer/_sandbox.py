"""The test reviewer's scratch space: extracting the workspace safely, and running the command.

Extraction accepts regular files and directories with plain relative names and nothing else (no
absolute names, no ``..``, no links, devices or FIFOs, no name twice), within a cap on bytes and
entries; it writes every file itself with ``O_EXCL | O_NOFOLLOW`` and never through a symlink.
Where the interpreter has tarfile's extraction filters (Python 3.11.4 and later), each member must
pass the ``data`` filter too. The role image's Python (Debian bookworm's 3.11.2) predates them, so
there the checks here are the whole defence.

The command runs with no shell, stdin closed, stdout and stderr merged into one pipe of which only
the last :data:`OUTPUT_KEEP_BYTES` are kept, in a session of its own: at its timeout, and once it
has exited, its whole process group is killed, so nothing it started outlives it or holds the pipe.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tarfile
import threading
import time
from collections.abc import Sequence
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import IO

__all__ = [
    "MAX_WORKSPACE_BYTES",
    "MAX_WORKSPACE_ENTRIES",
    "OUTPUT_KEEP_BYTES",
    "CommandResult",
    "WorkspaceRefused",
    "command_environment",
    "extract_workspace",
    "run_command",
]

MAX_WORKSPACE_BYTES = 256 * 1024**2
"""At most this many bytes of file content are extracted."""
MAX_WORKSPACE_ENTRIES = 200_000
"""At most this many files and directories are extracted."""
OUTPUT_KEEP_BYTES = 64 * 1024
"""How much of the command's output is kept: its last 64 KiB."""
_FILE_TYPES = (tarfile.REGTYPE, tarfile.AREGTYPE)
_REAP_SECONDS = 10


class WorkspaceRefused(Exception):
    """The workspace tar holds something other than plain files and directories inside it."""


@dataclass(frozen=True)
class CommandResult:
    """How the command ended: its exit code (``None`` after a timeout) and the tail of its output."""

    exit_code: int | None
    timed_out: bool
    output: str
    seconds: float


def _parts(name: str) -> list[str]:
    parts = name.split("/")
    if not name or name.startswith("/") or "\x00" in name or any(p in ("", ".", "..") for p in parts):
        raise WorkspaceRefused(f"{name!r} is not a plain relative path inside the workspace")
    return parts


def _directory(root: Path, parts: Sequence[str]) -> Path:
    """``root/parts...`` as a real directory, created as needed; never through a symlink."""
    path = root
    for part in parts:
        path = path / part
        with suppress(FileExistsError):
            os.mkdir(path, 0o755)
        if path.is_symlink() or not path.is_dir():
            raise WorkspaceRefused(f"{path.relative_to(root)} is not a directory")
    return path


def _write(target: Path, source: IO[bytes], mode: int, name: str) -> None:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(target, flags, mode)
    except FileExistsError:
        raise WorkspaceRefused(f"{name!r} appears twice, or as a file and a directory") from None
    with os.fdopen(fd, "wb") as out, source:
        while chunk := source.read(1024**2):
            out.write(chunk)


def extract_workspace(
    tar_path: Path,
    dest: Path,
    *,
    max_bytes: int = MAX_WORKSPACE_BYTES,
    max_entries: int = MAX_WORKSPACE_ENTRIES,
) -> int:
    """Extract the uncompressed tar at ``tar_path`` into the empty directory ``dest`` and return the
    number of files; :class:`WorkspaceRefused` for anything the module docstring refuses."""
    data_filter = getattr(tarfile, "data_filter", None)
    total = files = entries = 0
    try:
        with tarfile.open(tar_path, mode="r:") as tar:
            for member in tar:
                parts = _parts(member.name)
                if member.type != tarfile.DIRTYPE and member.type not in _FILE_TYPES:
                    raise WorkspaceRefused(f"{member.name!r} is not a regular file or a directory")
                if data_filter is not None:
                    data_filter(member, str(dest))
                entries, total = entries + 1, total + member.size
                if entries > max_entries or total > max_bytes:
                    raise WorkspaceRefused(
                        f"the workspace holds more than {max_bytes} bytes or {max_entries} entries"
                    )
                if member.type == tarfile.DIRTYPE:
                    _directory(dest, parts)
                    continue
                source = tar.extractfile(member)
                assert source is not None
                target = _directory(dest, parts[:-1]) / parts[-1]
                _write(target, source, 0o755 if member.mode & 0o100 else 0o644, member.name)
                files += 1
    except tarfile.TarError as exc:  # FilterError included
        raise WorkspaceRefused(f"the workspace tar is refused: {exc}") from None
    return files


def command_environment(home: Path, tmpdir: Path) -> dict[str, str]:
    """The whole environment the command runs with: ``PATH`` (this interpreter's directory first, so
    that ``python`` is this Python), ``HOME``, ``TMPDIR``, ``LANG=C.UTF-8``, ``PYTHONDONTWRITEBYTECODE``."""
    here = os.path.dirname(sys.executable)
    rest = [p for p in os.environ.get("PATH", os.defpath).split(os.pathsep) if p and p != here]
    return {
        "PATH": os.pathsep.join([here, *rest]),
        "HOME": str(home),
        "TMPDIR": str(tmpdir),
        "LANG": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
    }


def _drain(fd: int, kept: bytearray, keep: int) -> None:
    while chunk := os.read(fd, 65536):
        kept.extend(chunk)
        if len(kept) > keep:
            del kept[: len(kept) - keep]


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


def run_command(
    argv: Sequence[str],
    cwd: Path,
    *,
    timeout: float,
    env: dict[str, str],
    keep_bytes: int = OUTPUT_KEEP_BYTES,
) -> CommandResult:
    """Run ``argv`` in ``cwd`` as the module docstring says; ``OSError`` when it cannot start."""
    started = time.monotonic()
    process = subprocess.Popen(
        list(argv), cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, start_new_session=True, close_fds=True,
    )  # fmt: skip
    assert process.stdout is not None
    kept = bytearray()
    reader = threading.Thread(target=_drain, args=(process.stdout.fileno(), kept, keep_bytes), daemon=True)
    reader.start()
    code: int | None = None
    try:
        code = process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        pass
    finally:
        _kill_group(process)  # the group dies with it: what it started could hold the pipe open
        process.wait()
    seconds = time.monotonic() - started
    reader.join(_REAP_SECONDS)  # bounded: a process that left the group could keep the pipe
    if not reader.is_alive():  # else the pipe stays open until this process exits
        process.stdout.close()
    output = bytes(kept).decode("utf-8", "replace")
    return CommandResult(code, code is None, output, seconds)
