"""Immutable patch versions: their records, and :class:`PatchArtifactStore`, the one artifact interface.

A version's row in ``patch_versions`` holds its SHA-256, size and touched files; its bytes live
where the store's backend keeps them, behind :class:`PatchArtifactStore`:

- **SQLite**: a file ``.roundtable/patches/<proposal_id>/v<N>.diff`` under the project root
  (:class:`~store.patches._disk_artifacts.DiskPatchArtifacts`), read by the safe reader;
- **PostgreSQL**: a ``patch_blobs`` row beside the version's row
  (:class:`~store.patches._db_artifacts.DatabasePatchArtifacts`), so every host that shares the
  project's schema reads it and nothing is written under ``.roundtable/patches``.

Writing a version is two steps on both: :meth:`PatchArtifactStore.stage` (durable on disk, or
held in memory), then :meth:`PatchArtifactStore.insert_row` inside the caller's write transaction.
Reading is :meth:`PatchArtifactStore.read_verified`, which checks the bytes against the row's
SHA-256 on every read (``artifact_mismatch`` otherwise) and refuses more than ``max_bytes``.
"""

from __future__ import annotations

import json
import sqlite3
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

from store._ids import utc_now_iso
from store._project import STATE_DIR_NAME
from store.errors import NotFound

__all__ = [
    "PatchArtifactStore",
    "PatchVersion",
    "StagedPatch",
    "get_version",
    "list_versions",
    "patch_relative_path",
    "record_version",
    "version_from_row",
]

PATCHES_DIR_NAME = "patches"


def patch_relative_path(proposal_id: str, version: int) -> tuple[str, ...]:
    """Where the SQLite backend keeps a patch version: path components under the project root."""
    return (STATE_DIR_NAME, PATCHES_DIR_NAME, proposal_id, f"v{version}.diff")


@dataclass(frozen=True)
class StagedPatch:
    """A patch version ready to be recorded: durable on disk (SQLite) or held here (PostgreSQL)."""

    proposal_id: str
    version: int
    sha256: str
    size_bytes: int
    files: tuple[str, ...]
    path: str
    """What the version's row names as its location (a file path, or ``db:patch_blobs/...``)."""
    data: bytes = field(default=b"", repr=False, compare=False)
    """The bytes, when the backend writes them with the row (PostgreSQL); empty for a file."""


@dataclass(frozen=True)
class PatchVersion:
    """One recorded, immutable patch version."""

    proposal_id: str
    version: int
    sha256: str
    size_bytes: int
    files: tuple[str, ...]
    path: str
    created_by: str
    created_at: str
    unchanged: bool = False
    """Set on the answer to a re-attach of this version's exact bytes: nothing was written."""

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape used by every interface (``unchanged: true`` only when set)."""
        extra: dict[str, Any] = {"unchanged": True} if self.unchanged else {}
        return {
            "proposal_id": self.proposal_id,
            "version": self.version,
            "sha256": self.sha256,
            "size_bytes": self.size_bytes,
            "files": list(self.files),
            "path": self.path,
            "created_by": self.created_by,
            "created_at": self.created_at,
            **extra,
        }


def version_from_row(row: sqlite3.Row) -> PatchVersion:
    """Build a :class:`PatchVersion` from a ``patch_versions`` row."""
    return PatchVersion(
        proposal_id=row["proposal_id"],
        version=int(row["version"]),
        sha256=row["sha256"],
        size_bytes=int(row["size_bytes"]),
        files=tuple(json.loads(row["files"])),
        path=row["path"],
        created_by=row["created_by"],
        created_at=row["created_at"],
    )


def get_version(conn: sqlite3.Connection, proposal_id: str, version: int) -> PatchVersion:
    """One recorded version, or :class:`NotFound`."""
    row = conn.execute(
        "SELECT * FROM patch_versions WHERE proposal_id = ? AND version = ?", (proposal_id, version)
    ).fetchone()
    if row is None:
        raise NotFound(f"proposal {proposal_id} has no patch version {version}")
    return version_from_row(row)


def list_versions(conn: sqlite3.Connection, proposal_id: str) -> list[PatchVersion]:
    """Every recorded version of a proposal, oldest first."""
    rows = conn.execute(
        "SELECT * FROM patch_versions WHERE proposal_id = ? ORDER BY version", (proposal_id,)
    ).fetchall()
    return [version_from_row(row) for row in rows]


def record_version(conn: sqlite3.Connection, staged: StagedPatch, *, actor: str) -> PatchVersion:
    """Insert the ``patch_versions`` row of a staged version (inside the caller's transaction)."""
    now = utc_now_iso()
    conn.execute(
        "INSERT INTO patch_versions (proposal_id, version, sha256, size_bytes, files, path, created_by,"
        " created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (
            staged.proposal_id,
            staged.version,
            staged.sha256,
            staged.size_bytes,
            json.dumps(list(staged.files)),
            staged.path,
            actor,
            now,
        ),
    )
    return PatchVersion(
        staged.proposal_id,
        staged.version,
        staged.sha256,
        staged.size_bytes,
        staged.files,
        staged.path,
        actor,
        now,
    )


class PatchArtifactStore(ABC):
    """Where patch versions' bytes live: writes, verified reads, garbage collection.

    Rows go through the caller's write transaction. Every method but :meth:`insert_row` is
    blocking and opens its own transaction when it needs one (call it through ``Database.run``
    from async code).
    """

    backend: str
    """``sqlite`` (files under ``.roundtable/patches``) or ``postgresql`` (``patch_blobs`` rows)."""
    max_bytes: int
    """The largest version :meth:`read_verified` returns (``policy.max_patch_bytes``)."""

    @abstractmethod
    def stage(self, proposal_id: str, version: int, data: bytes, files: list[str]) -> StagedPatch:
        """Step 1, before the transaction: make the bytes ready to record; never replace a version."""

    @abstractmethod
    def insert_row(self, conn: sqlite3.Connection, staged: StagedPatch, *, actor: str) -> PatchVersion:
        """Step 2, inside the write transaction: check the staged bytes, record the version."""

    @abstractmethod
    def discard(self, staged: StagedPatch) -> None:
        """Undo step 1 after the transaction failed (nothing to undo where the bytes went with the row)."""

    @abstractmethod
    def read_verified(self, version: PatchVersion) -> bytes:
        """The bytes of a recorded version, checked against its SHA-256 (``artifact_mismatch``)."""

    @abstractmethod
    def collect_garbage(self, *, grace_seconds: float = 60.0) -> dict[str, Any]:
        """Remove what an interrupted write left behind: ``{"removed": [...], "kept_recent": [...]}``."""
