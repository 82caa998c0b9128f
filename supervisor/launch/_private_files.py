"""Small files a supervisor keeps in its private runtime base between processes, written and read safely.

The runtime base (``0700``, ours: :class:`~supervisor.launch.RuntimeRoot`) holds, beside the launch
directories, what one command leaves the next: the prestart's recipes
(:mod:`supervisor.docker._prestart`) and the role tools' JSON schemas
(:mod:`supervisor._schema_cache`). Each is written atomically (a reader sees the old or the new
file, never half of one) and read only when it is a plain file of ours that nobody else may
write, reached without a link, and not larger than the reader expects; anything else reads as
absent, and the caller builds afresh what the file would have saved.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from pathlib import Path

__all__ = ["keep_newest", "read_private", "write_private"]


def write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` (mode ``0600``) through a new temporary file renamed over it."""
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(4)}")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def read_private(path: Path, max_bytes: int) -> bytes | None:
    """The bytes of ``path`` if it is a plain file of ours, not group or other writable, not a link
    and at most ``max_bytes`` long; else ``None``."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o022:
            return None
        with os.fdopen(os.dup(fd), "rb") as handle:
            data = handle.read(max_bytes + 1)
        return data if len(data) <= max_bytes else None
    except OSError:
        return None
    finally:
        os.close(fd)


def keep_newest(directory: Path, count: int) -> None:
    """Remove all but the ``count`` most recently written ``*.json`` files of ``directory`` (what
    they were kept for comes and goes: nothing else would ever remove a stale one)."""
    with contextlib.suppress(OSError):
        entries = sorted(directory.glob("*.json"), key=lambda path: path.stat().st_mtime, reverse=True)
        for stale in entries[count:]:
            stale.unlink(missing_ok=True)
