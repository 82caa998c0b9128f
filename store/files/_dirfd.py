"""File access through directory file descriptors, never following a symlink.

Writers under ``.roundtable`` and into the project's working tree walk each path component with
``os.open(name, O_DIRECTORY|O_NOFOLLOW, dir_fd=parent)``, so a symlinked directory anywhere on the
way is refused (``unsafe_path``) instead of followed out of the tree. New files are written to a
temporary name in the same directory, fsynced, then moved into place (``os.link`` when the target
must not already exist, ``os.replace`` when it is meant to be replaced), and the directory is fsynced.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path

from store.errors import UnsafePath

__all__ = [
    "TEMP_PREFIX",
    "create_file_at",
    "fsync_dir",
    "open_dir",
    "opened_dir",
    "read_file_at",
    "replace_file_at",
    "stat_at",
]

TEMP_PREFIX = ".rt-tmp-"
"""Temporary files start with this; ``gc`` removes old ones left by a crash."""

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_UNSAFE_ERRNOS = (errno.ELOOP, errno.ENOTDIR, errno.EMLINK)


def _check_component(part: str) -> None:
    if part in ("", ".", "..") or "/" in part or "\x00" in part:
        raise UnsafePath(f"refusing path component {part!r}")


def open_dir(root: Path | str, parts: Sequence[str], *, create: bool = False) -> tuple[int, list[str]]:
    """A descriptor on ``root/parts...`` and the components it had to create (when ``create``).

    The root itself is opened normally (it is the trusted starting point); every component
    below it is opened without following symlinks.
    """
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    created: list[str] = []
    try:
        for index, part in enumerate(parts):
            _check_component(part)
            try:
                child = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                with suppress(FileExistsError):  # a concurrent writer made it first
                    os.mkdir(part, 0o755, dir_fd=fd)
                    created.append("/".join(parts[: index + 1]))
                    os.fsync(fd)
                child = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                if exc.errno in _UNSAFE_ERRNOS:
                    raise UnsafePath(
                        f"{'/'.join(parts[: index + 1])} is a symlink or not a directory"
                    ) from None
                raise
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd, created


@contextmanager
def opened_dir(root: Path | str, parts: Sequence[str], *, create: bool = False) -> Iterator[int]:
    """:func:`open_dir` as a context manager that closes the descriptor."""
    fd, _ = open_dir(root, parts, create=create)
    try:
        yield fd
    finally:
        os.close(fd)


def fsync_dir(dir_fd: int) -> None:
    """Make the directory's entries durable."""
    os.fsync(dir_fd)


def stat_at(dir_fd: int, name: str) -> os.stat_result | None:
    """``lstat`` of ``name`` in the directory, or ``None`` when absent."""
    _check_component(name)
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def read_file_at(dir_fd: int, name: str, *, max_bytes: int) -> tuple[bytes, os.stat_result] | None:
    """The bytes and ``fstat`` of a regular file in the directory; ``None`` when absent.

    A symlink, FIFO, device or directory is :class:`UnsafePath`; so is a file over ``max_bytes``.
    """
    _check_component(name)
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno in _UNSAFE_ERRNOS:
            raise UnsafePath(f"{name} is a symlink") from None
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UnsafePath(f"{name} is not a regular file")
        if info.st_size > max_bytes:
            raise UnsafePath(f"{name} is larger than {max_bytes} bytes")
        chunks: list[bytes] = []
        remaining = max_bytes + 1
        while remaining > 0 and (chunk := os.read(fd, min(remaining, 1 << 20))):
            chunks.append(chunk)
            remaining -= len(chunk)
        data = b"".join(chunks)
        if len(data) > max_bytes:
            raise UnsafePath(f"{name} grew past {max_bytes} bytes while being read")
        return data, info
    finally:
        os.close(fd)


def _write_temp(dir_fd: int, data: bytes, mode: int) -> str:
    name = f"{TEMP_PREFIX}{os.getpid()}-{secrets.token_hex(6)}"
    fd = os.open(
        name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=dir_fd
    )
    try:
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        os.fchmod(fd, mode)  # the umask must not change an artifact's or a source file's mode
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        with suppress(OSError):
            os.unlink(name, dir_fd=dir_fd)
        raise
    os.close(fd)
    return name


def create_file_at(dir_fd: int, name: str, data: bytes, *, mode: int = 0o444) -> None:
    """Durably create ``name`` with ``data``; :class:`FileExistsError` if it exists (never overwrites)."""
    _check_component(name)
    temp = _write_temp(dir_fd, data, mode)
    try:
        os.link(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd, follow_symlinks=False)
    finally:
        with suppress(FileNotFoundError):
            os.unlink(temp, dir_fd=dir_fd)
    fsync_dir(dir_fd)


def replace_file_at(dir_fd: int, name: str, data: bytes, *, mode: int) -> None:
    """Durably set ``name``'s contents (created or atomically replaced)."""
    _check_component(name)
    temp = _write_temp(dir_fd, data, mode)
    try:
        os.replace(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with suppress(FileNotFoundError):
            os.unlink(temp, dir_fd=dir_fd)
        raise
    fsync_dir(dir_fd)
