"""Reading stored artifacts through a root handle held since start-up (SECURITY.md, safe file access).

:class:`SafeFiles` opens the project root once, at startup, as a directory descriptor. A read walks
to the artifact's directory and reads the file with the one no-symlink walk of
:mod:`store.files._walk` (no symlink followed, the root's device throughout, a regular file with one
link within the cap), then checks that the bytes hash to the SHA-256 the database recorded.

Errors: a bad component, symlink, non-regular file, extra link, foreign device or oversized file
is :class:`UnsafePath`; a missing file or a hash that no longer matches is :class:`ArtifactMismatch`.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from store.errors import ArtifactMismatch, InternalError
from store.files._walk import check_components, open_root, read_file_at, walk

__all__ = ["SafeArtifact", "SafeFiles"]


@dataclass(frozen=True)
class SafeArtifact:
    """Bytes read through :class:`SafeFiles`, with their SHA-256 and size."""

    data: bytes
    sha256: str
    size_bytes: int


class SafeFiles:
    """A directory handle on the project root and the no-follow reads made through it."""

    def __init__(self, root: Path | str):
        self.root = Path(root)
        # The root is the trusted starting point chosen by the operator, so it may be reached
        # through symlinks; everything below it may not.
        self._fd: int | None = open_root(self.root)
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

    def read_unverified(self, components: Sequence[str], *, max_bytes: int) -> SafeArtifact:
        """Read ``root/components...`` without following symlinks, without a hash check.

        Callers that know the expected hash use :meth:`read_artifact`; this exists for files the
        database holds no hash for, and for tests of the walk itself.
        """
        parts = check_components(components)
        where = "/".join(parts)
        if max_bytes < 0:
            raise InternalError("max_bytes must not be negative")
        try:
            parent, _ = walk(self._root_fd(), parts[:-1])
        except FileNotFoundError as exc:
            raise ArtifactMismatch(f"{exc.filename} is missing") from None
        try:
            found = read_file_at(parent, parts[-1], max_bytes=max_bytes, where=where)
        finally:
            os.close(parent)
        if found is None:
            raise ArtifactMismatch(f"{where} is missing")
        data = found[0]
        return SafeArtifact(data, hashlib.sha256(data).hexdigest(), len(data))

    def read_artifact(
        self, components: Sequence[str], *, expected_sha256: str, max_bytes: int
    ) -> SafeArtifact:
        """Read an artifact and prove it is the one the database recorded (by SHA-256)."""
        artifact = self.read_unverified(components, max_bytes=max_bytes)
        if not hmac.compare_digest(artifact.sha256, expected_sha256.lower()):
            raise ArtifactMismatch(
                f"{'/'.join(components)} no longer matches the SHA-256 recorded in the database"
            )
        return artifact
