"""Durable writes under the project root, into directories reached by the one walk (:mod:`._walk`).

Writers under ``.roundtable`` and into the project's working tree open the target directory with
:func:`open_dir` / :func:`opened_dir` (the no-symlink walk from the project root, same device
throughout, ``unsafe_path`` otherwise), so a patch or an artifact can never be written outside the
tree. New files are written to a temporary name in the same directory, fsynced, then moved into
place (``os.link`` when the target must not already exist, ``os.replace`` when it is meant to be
replaced), and the directory is fsynced.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path

from store.files._walk import check_components, check_file, open_root, walk

__all__ = [
    "TEMP_PREFIX",
    "create_file_at",
    "open_dir",
    "opened_dir",
    "remove_file_at",
    "replace_file_at",
]

TEMP_PREFIX = ".rt-tmp-"
"""Temporary files start with this; ``gc`` removes old ones left by a crash."""


def open_dir(root: Path | str, parts: Sequence[str], *, create: bool = False) -> tuple[int, list[str]]:
    """A descriptor on ``root/parts...`` and the directories it had to create (when ``create``).

    :func:`store.files._walk.walk` from a fresh descriptor on ``root``: a missing directory is
    :class:`FileNotFoundError` unless ``create``; a symlink, a non-directory or another device on
    the way is :class:`~store.errors.UnsafePath`.
    """
    return walk(open_root(root), parts, create=create)


@contextmanager
def opened_dir(root: Path | str, parts: Sequence[str], *, create: bool = False) -> Iterator[int]:
    """:func:`open_dir` as a context manager that closes the descriptor."""
    fd, _ = open_dir(root, parts, create=create)
    try:
        yield fd
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
    check_components((name,))
    temp = _write_temp(dir_fd, data, mode)
    try:
        os.link(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd, follow_symlinks=False)
    finally:
        with suppress(FileNotFoundError):
            os.unlink(temp, dir_fd=dir_fd)
    os.fsync(dir_fd)


def replace_file_at(dir_fd: int, name: str, data: bytes, *, mode: int) -> None:
    """Durably set ``name``'s contents (created or atomically replaced)."""
    check_components((name,))
    temp = _write_temp(dir_fd, data, mode)
    try:
        os.replace(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with suppress(FileNotFoundError):
            os.unlink(temp, dir_fd=dir_fd)
        raise
    os.fsync(dir_fd)


def remove_file_at(dir_fd: int, name: str, *, where: str | None = None) -> bool:
    """Durably remove the file ``name`` if it exists; whether it did.

    It must pass the walk's file checks first (regular, one link, the directory's device), so a
    symlink, directory or alias is :class:`~store.errors.UnsafePath` rather than removed.
    """
    check_components((name,))
    try:
        info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        check_file(info, where or name, device=os.fstat(dir_fd).st_dev, max_bytes=None)
        os.unlink(name, dir_fd=dir_fd)
    except FileNotFoundError:
        return False
    os.fsync(dir_fd)
    return True
