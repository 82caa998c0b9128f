"""Reading stored artifacts without following a symlink anywhere on the way (SECURITY.md).

:class:`SafeFiles` opens the project root once, at startup, as a directory descriptor
(``O_RDONLY|O_DIRECTORY|O_CLOEXEC``). A read walks every component below it with
``os.open(name, O_RDONLY|O_DIRECTORY|O_NOFOLLOW|O_CLOEXEC, dir_fd=parent)`` and opens the file
with ``O_RDONLY|O_NOFOLLOW|O_NONBLOCK|O_CLOEXEC``, so a symlinked ``.roundtable``, ``patches``,
proposal directory or file is refused instead of followed, even when it is swapped in while the
walk runs: each step resolves one name inside a directory already held open. ``O_NONBLOCK``
keeps a FIFO from blocking the open; the ``fstat`` that follows refuses it.

After opening, ``fstat`` must show a regular file with exactly one link (a hard link could alias
a file outside the tree), on the root's device (no mount under the tree), no larger than the
cap; the bytes read must stay under the cap and hash to the SHA-256 the database recorded.

Errors: a bad component, symlink, non-regular file, extra link, foreign device or oversized file
is :class:`UnsafePath`; a missing file or a hash that no longer matches is :class:`ArtifactMismatch`.
"""

from __future__ import annotations

import errno
import hashlib
import hmac
import os
import stat
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from store.errors import ArtifactMismatch, InternalError, UnsafePath

__all__ = ["SafeArtifact", "SafeFiles", "check_components", "split_relative"]

_ROOT_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
# What the kernel answers when O_NOFOLLOW meets a symlink, or O_DIRECTORY meets a non-directory.
_SYMLINK_ERRNOS = frozenset({errno.ELOOP, errno.ENOTDIR, errno.EMLINK})
_CHUNK = 1 << 16


@dataclass(frozen=True)
class SafeArtifact:
    """Bytes read through :class:`SafeFiles`, with their SHA-256 and size."""

    data: bytes
    sha256: str
    size_bytes: int


def check_components(components: Sequence[str]) -> tuple[str, ...]:
    """Validate path components: nonempty, no ``.``/``..``, no separator, no NUL, not absolute."""
    if isinstance(components, str) or not components:
        raise UnsafePath("a path must be a nonempty sequence of components")
    checked = []
    for part in components:
        if not isinstance(part, str) or part in ("", ".", ".."):
            raise UnsafePath(f"refusing path component {part!r}")
        if "/" in part or "\x00" in part or os.sep in part:
            raise UnsafePath(f"refusing path component {part!r}: separators, absolute paths and NUL")
        checked.append(part)
    return tuple(checked)


def split_relative(path: str) -> tuple[str, ...]:
    """Split a relative ``a/b/c`` path into checked components; absolute paths are refused."""
    if not isinstance(path, str) or path.startswith("/") or "\x00" in path:
        raise UnsafePath(f"refusing path {path!r}: it must be relative and free of NUL")
    return check_components(path.split("/"))


def _display(components: Sequence[str]) -> str:
    return "/".join(components)


class SafeFiles:
    """A directory handle on the project root and the no-follow reads made through it."""

    def __init__(self, root: Path | str):
        self.root = Path(root)
        # The root is the trusted starting point chosen by the operator, so it may be reached
        # through symlinks; everything below it may not.
        self._fd: int | None = os.open(self.root, _ROOT_FLAGS)
        self._dev = os.fstat(self._fd).st_dev
        self._lock = threading.Lock()

    def close(self) -> None:
        """Release the root descriptor; later reads fail with ``internal``."""
        with self._lock:
            fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    def _root_fd(self) -> int:
        with self._lock:
            if self._fd is None:
                raise InternalError("the project root handle is closed")
            # A duplicate, so a concurrent close() cannot pull the descriptor from under a walk.
            return os.dup(self._fd)

    # -- reads ---------------------------------------------------------------------------------

    def read_unverified(self, components: Sequence[str], *, max_bytes: int) -> SafeArtifact:
        """Read ``root/components...`` without following symlinks, without a hash check.

        Callers that know the expected hash use :meth:`read_artifact`; this exists for files the
        database holds no hash for, and for tests of the walk itself.
        """
        parts = check_components(components)
        if max_bytes < 0:
            raise InternalError("max_bytes must not be negative")
        parent = self._root_fd()
        try:
            for index, name in enumerate(parts[:-1]):
                child = self._open_dir(parent, name, parts[: index + 1])
                os.close(parent)
                parent = child
            return self._read_file(parent, parts, max_bytes)
        finally:
            os.close(parent)

    def read_artifact(
        self, components: Sequence[str], *, expected_sha256: str, max_bytes: int
    ) -> SafeArtifact:
        """Read an artifact and prove it is the one the database recorded (by SHA-256)."""
        artifact = self.read_unverified(components, max_bytes=max_bytes)
        if not hmac.compare_digest(artifact.sha256, expected_sha256.lower()):
            raise ArtifactMismatch(
                f"{_display(components)} no longer matches the SHA-256 recorded in the database"
            )
        return artifact

    # -- steps ---------------------------------------------------------------------------------

    def _open_dir(self, parent: int, name: str, so_far: Sequence[str]) -> int:
        try:
            fd = os.open(name, _DIR_FLAGS, dir_fd=parent)
        except FileNotFoundError:
            raise ArtifactMismatch(f"{_display(so_far)} is missing") from None
        except OSError as exc:
            if exc.errno in _SYMLINK_ERRNOS:
                raise UnsafePath(f"{_display(so_far)} is a symlink or not a directory") from None
            raise
        try:
            if os.fstat(fd).st_dev != self._dev:
                raise UnsafePath(f"{_display(so_far)} is on another file system than the project")
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _read_file(self, parent: int, parts: Sequence[str], max_bytes: int) -> SafeArtifact:
        where = _display(parts)
        name = parts[-1]
        # Refuse FIFOs, devices and symlinks before opening them at all; fstat below re-checks
        # what was actually opened, since the name can be swapped between the two calls.
        try:
            before = os.stat(name, dir_fd=parent, follow_symlinks=False)
        except FileNotFoundError:
            raise ArtifactMismatch(f"{where} is missing") from None
        _check_file(before, where, self._dev, max_bytes)
        try:
            fd = os.open(name, _FILE_FLAGS, dir_fd=parent)
        except FileNotFoundError:
            raise ArtifactMismatch(f"{where} is missing") from None
        except OSError as exc:
            if exc.errno in _SYMLINK_ERRNOS:
                raise UnsafePath(f"{where} is a symlink") from None
            raise
        try:
            _check_file(os.fstat(fd), where, self._dev, max_bytes)
            digest = hashlib.sha256()
            chunks: list[bytes] = []
            total = 0
            while chunk := os.read(fd, min(_CHUNK, max_bytes + 1 - total) or 1):
                total += len(chunk)
                if total > max_bytes:
                    raise UnsafePath(f"{where} grew past {max_bytes} bytes while being read")
                digest.update(chunk)
                chunks.append(chunk)
        except BlockingIOError:
            raise UnsafePath(f"{where} is not a regular file") from None
        finally:
            os.close(fd)
        return SafeArtifact(b"".join(chunks), digest.hexdigest(), total)


def _check_file(info: os.stat_result, where: str, dev: int, max_bytes: int) -> None:
    if stat.S_ISLNK(info.st_mode):
        raise UnsafePath(f"{where} is a symlink")
    if not stat.S_ISREG(info.st_mode):
        raise UnsafePath(f"{where} is not a regular file")
    if info.st_nlink != 1:
        raise UnsafePath(f"{where} has {info.st_nlink} links; artifacts must have exactly one")
    if info.st_dev != dev:
        raise UnsafePath(f"{where} is on another file system than the project")
    if info.st_size > max_bytes:
        raise UnsafePath(f"{where} is {info.st_size} bytes, over the {max_bytes}-byte limit")
