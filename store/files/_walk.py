"""The one walk under the project root that never follows a symlink (SECURITY.md, safe file access).

Every file Roundtable reads or writes below the project root (stored patch artifacts, rollback
artifacts, files of the working tree) is reached this way, by readers and writers alike:

- the root is opened as a directory (``O_RDONLY|O_DIRECTORY|O_CLOEXEC``); it is the operator's
  trusted starting point, so it may itself be reached through a symlink, and its device is the
  project's file system;
- every component below it must be nonempty, not ``.`` or ``..``, free of separators and NUL, and
  is opened with ``os.open(name, O_RDONLY|O_DIRECTORY|O_NOFOLLOW|O_CLOEXEC, dir_fd=parent)``, so a
  symlink anywhere on the way is refused instead of followed, even one swapped in while the walk
  runs: each step resolves one name inside a directory already held open;
- every directory opened must be on the root's device (no mount inside the tree);
- a file is ``lstat``-ed first (a FIFO or device is refused before it is opened at all), opened with
  ``O_RDONLY|O_NOFOLLOW|O_NONBLOCK|O_CLOEXEC``, and its ``fstat`` must show a regular file with
  exactly one link (a hard link could alias a file outside the tree), on the root's device, within
  the size cap; the bytes read must stay within the cap too.

One translation of what the kernel answers (:func:`unsafe_path_error`): ``ELOOP``/``EMLINK``
(``O_NOFOLLOW`` met a symlink), ``ENOTDIR`` (a symlink or a file where a directory must be) and
``ENXIO`` (a socket or device) are :class:`UnsafePath`. ``ENOENT`` stays :class:`FileNotFoundError`
naming the relative path, for the caller to say what absence means (a writer creates the directory,
the artifact reader answers ``artifact_mismatch``); any other error propagates unchanged.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path

from store.errors import UnsafePath

__all__ = [
    "check_components",
    "check_file",
    "open_root",
    "read_file_at",
    "split_relative",
    "unsafe_path_error",
    "walk",
]

_ROOT_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_CHUNK = 1 << 16

# What the kernel answers when O_NOFOLLOW meets a symlink (EMLINK on FreeBSD), when O_DIRECTORY meets
# a symlink or a file (Linux answers ENOTDIR for a symlinked directory), and when open meets a socket.
_UNSAFE_ERRNOS = {
    errno.ELOOP: "is a symlink",
    errno.EMLINK: "is a symlink",
    errno.ENOTDIR: "is a symlink or not a directory",
    errno.ENXIO: "is not a regular file",
}


def _check_component(part: object) -> str:
    if not isinstance(part, str) or part in ("", ".", ".."):
        raise UnsafePath(f"refusing path component {part!r}")
    if "/" in part or "\x00" in part or os.sep in part:
        raise UnsafePath(f"refusing path component {part!r}: separators, absolute paths and NUL")
    return part


def check_components(components: Sequence[str]) -> tuple[str, ...]:
    """Validate a path given as components: a nonempty sequence, each one fit for :func:`walk`."""
    if isinstance(components, str) or not components:
        raise UnsafePath("a path must be a nonempty sequence of components")
    return tuple(_check_component(part) for part in components)


def split_relative(path: str) -> tuple[str, ...]:
    """Split a relative ``a/b/c`` path into checked components; absolute paths are refused."""
    if not isinstance(path, str) or path.startswith("/") or "\x00" in path:
        raise UnsafePath(f"refusing path {path!r}: it must be relative and free of NUL")
    return check_components(path.split("/"))


def unsafe_path_error(exc: OSError, where: str) -> UnsafePath | None:
    """The :class:`UnsafePath` that an ``OSError`` met at ``where`` stands for; ``None`` for other errors."""
    reason = _UNSAFE_ERRNOS.get(exc.errno or 0)
    return None if reason is None else UnsafePath(f"{where} {reason}")


@contextmanager
def _translated(where: str) -> Iterator[None]:
    """Apply the one errno translation to the ``os`` calls inside the block."""
    try:
        yield
    except FileNotFoundError:
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), where) from None
    except OSError as exc:
        unsafe = unsafe_path_error(exc, where)
        if unsafe is None:
            raise
        raise unsafe from None


def _check_device(fd: int, device: int, where: str) -> None:
    if os.fstat(fd).st_dev != device:
        raise UnsafePath(f"{where} is on another file system than the project")


def open_root(root: Path | str) -> int:
    """A descriptor on the project root, the trusted start of every walk (symlinks allowed here only)."""
    return os.open(root, _ROOT_FLAGS)


def walk(start_fd: int, parts: Sequence[str], *, create: bool = False) -> tuple[int, list[str]]:
    """A descriptor on ``start/parts...`` and the directories it created (``a/b`` paths, when ``create``).

    Takes ownership of ``start_fd`` (it is closed or returned). Each component is opened without
    following a symlink and must be on ``start_fd``'s device; with ``create``, missing directories
    are made (mode 0o755) and their parent fsynced. Errors as the module says.
    """
    fd = start_fd
    created: list[str] = []
    try:
        device = os.fstat(fd).st_dev
        for index, part in enumerate(parts):
            where = "/".join(parts[: index + 1])
            _check_component(part)
            with _translated(where):
                child = _open_child(fd, part, where, create=create, created=created)
            os.close(fd)
            fd = child
            _check_device(fd, device, where)
    except BaseException:
        os.close(fd)
        raise
    return fd, created


def _open_child(parent: int, part: str, where: str, *, create: bool, created: list[str]) -> int:
    try:
        return os.open(part, _DIR_FLAGS, dir_fd=parent)
    except FileNotFoundError:
        if not create:
            raise
    with suppress(FileExistsError):  # a concurrent writer made it first, or a symlink is there
        os.mkdir(part, 0o755, dir_fd=parent)
        created.append(where)
        os.fsync(parent)
    return os.open(part, _DIR_FLAGS, dir_fd=parent)


def check_file(info: os.stat_result, where: str, *, device: int, max_bytes: int | None) -> None:
    """:class:`UnsafePath` unless ``info`` is a regular file with one link on ``device`` within the cap."""
    if stat.S_ISLNK(info.st_mode):
        raise UnsafePath(f"{where} is a symlink")
    if not stat.S_ISREG(info.st_mode):
        raise UnsafePath(f"{where} is not a regular file")
    if info.st_nlink != 1:
        raise UnsafePath(f"{where} has {info.st_nlink} links; files here must have exactly one")
    if info.st_dev != device:
        raise UnsafePath(f"{where} is on another file system than the project")
    if max_bytes is not None and info.st_size > max_bytes:
        raise UnsafePath(f"{where} is {info.st_size} bytes, over the {max_bytes}-byte limit")


def read_file_at(
    dir_fd: int, name: str, *, max_bytes: int, where: str | None = None
) -> tuple[bytes, os.stat_result] | None:
    """The bytes and ``fstat`` of the file ``name`` in a directory from :func:`walk`; ``None`` when absent.

    The directory's device is the root's (the walk proved it), so the file must be on it too.
    ``where`` names the file in errors (default ``name``).
    """
    _check_component(name)
    shown = where or name
    device = os.fstat(dir_fd).st_dev
    try:
        with _translated(shown):
            # Refuse FIFOs, devices and symlinks before opening them at all; the fstat below
            # re-checks what was actually opened, since the name can be swapped in between.
            check_file(
                os.stat(name, dir_fd=dir_fd, follow_symlinks=False), shown, device=device, max_bytes=max_bytes
            )
            fd = os.open(name, _FILE_FLAGS, dir_fd=dir_fd)
    except FileNotFoundError:
        return None
    try:
        info = os.fstat(fd)
        check_file(info, shown, device=device, max_bytes=max_bytes)
        return _read_capped(fd, shown, max_bytes), info
    finally:
        os.close(fd)


def _read_capped(fd: int, where: str, max_bytes: int) -> bytes:
    chunks: list[bytes] = []
    total = 0
    try:
        while chunk := os.read(fd, min(_CHUNK, max_bytes + 1 - total) or 1):
            total += len(chunk)
            if total > max_bytes:
                raise UnsafePath(f"{where} grew past {max_bytes} bytes while being read")
            chunks.append(chunk)
    except BlockingIOError:
        raise UnsafePath(f"{where} is not a regular file") from None
    return b"".join(chunks)
