"""PostgreSQL's patch artifacts: each version's bytes in a ``patch_blobs`` row beside its version row.

Every host that shares the project's schema (``[store] schema``) reads the same bytes; nothing is
written under ``.roundtable/patches``. The blob (``bytea``, with its SHA-256 and size) is inserted
in the same transaction as the ``patch_versions`` row, so a row never lacks its bytes and no
orphan can exist (:meth:`DatabasePatchArtifacts.collect_garbage` has nothing to do). The schema's
triggers refuse any ``UPDATE``, ``DELETE`` or ``TRUNCATE`` of a blob (``pg_schema/0010``).

Every read recomputes the SHA-256 of the bytes it got and compares it with the version's row:
anything else (a blob changed behind the triggers' back, a blob whose own hash or size disagrees)
is ``artifact_mismatch``, as a changed file is on SQLite; more than ``max_bytes`` is refused before
the bytes leave the server (``unsafe_path``, the safe reader's answer to an oversized file).

Versions recorded before migration 0010 have no blob: their row names a file under
``.roundtable/patches``, which is read (and checked) as SQLite's files are, on the host that has it.
"""

from __future__ import annotations

import hashlib
import hmac
import sqlite3
from typing import Any

from store._project import ProjectPaths
from store.db import Database
from store.errors import ArtifactMismatch, UnsafePath
from store.files import SafeFiles
from store.patches._artifacts import (
    PatchArtifactStore,
    PatchVersion,
    StagedPatch,
    patch_relative_path,
    record_version,
)
from store.patches._disk_artifacts import DiskPatchArtifacts

__all__ = ["DatabasePatchArtifacts", "blob_locator", "open_patch_artifacts"]

_FETCH = (
    "SELECT sha256, size_bytes, octet_length(content) AS stored,"
    " CASE WHEN octet_length(content) <= %s THEN content END AS content"
    " FROM patch_blobs WHERE proposal_id = %s AND version = %s"
)
"""psycopg's placeholders: this statement goes to the psycopg connection, not through the store's SQL."""


def blob_locator(proposal_id: str, version: int) -> str:
    """What a version's row names as its location on PostgreSQL (no file: a ``patch_blobs`` row)."""
    return f"db:patch_blobs/{proposal_id}/v{version}"


class DatabasePatchArtifacts(PatchArtifactStore):
    """Patch versions as immutable ``patch_blobs`` rows, written with their version's row."""

    backend = "postgresql"

    def __init__(self, db: Database, legacy: DiskPatchArtifacts):
        self.db = db
        self.legacy = legacy
        self.max_bytes = legacy.max_bytes

    def stage(self, proposal_id: str, version: int, data: bytes, files: list[str]) -> StagedPatch:
        """Step 1: nothing to write yet; the bytes go into the database with the row."""
        digest = hashlib.sha256(data).hexdigest()
        locator = blob_locator(proposal_id, version)
        return StagedPatch(proposal_id, version, digest, len(data), tuple(files), locator, data)

    def insert_row(self, conn: sqlite3.Connection, staged: StagedPatch, *, actor: str) -> PatchVersion:
        """Step 2, inside the write transaction: the version's row, then its blob (same commit).

        A version that exists already is refused by the primary key (``conflict``): a blob is
        never replaced.
        """
        data = staged.data
        if len(data) != staged.size_bytes or hashlib.sha256(data).hexdigest() != staged.sha256:
            raise ArtifactMismatch(f"patch {staged.path} changed before it was recorded")
        version = record_version(conn, staged, actor=actor)
        conn.execute(
            "INSERT INTO patch_blobs (proposal_id, version, sha256, size_bytes, content)"
            " VALUES (?, ?, ?, ?, ?)",
            (staged.proposal_id, staged.version, staged.sha256, staged.size_bytes, data),
        )
        return version

    def discard(self, staged: StagedPatch) -> None:
        """Nothing to undo: the blob was part of the transaction that failed."""

    def read_verified(self, version: PatchVersion) -> bytes:
        """The blob's bytes, checked against the version row's SHA-256 and size on this read."""

        def fetch(conn: Any) -> Any:
            # The bytes leave the server only when within the limit; their length comes either way.
            # Binary results on the psycopg connection itself: bytea as text is hex, twice the
            # bytes on the wire and a decode (3-5x slower for 512 KiB, benchmarks/bench_patch_artifacts).
            params = (self.max_bytes, version.proposal_id, version.version)
            return conn.raw.execute(_FETCH, params, binary=True).fetchone()

        row = self.db.read(fetch)
        where = blob_locator(version.proposal_id, version.version)
        if row is None:
            if version.path == "/".join(patch_relative_path(version.proposal_id, version.version)):
                return self.legacy.read_verified(version)  # recorded before migration 0010
            raise ArtifactMismatch(f"{where} is missing")
        if int(row["stored"]) > self.max_bytes:
            raise UnsafePath(f"{where} is {row['stored']} bytes, over the {self.max_bytes}-byte limit")
        data = bytes(row["content"])
        expected = version.sha256.lower()
        digest = hashlib.sha256(data).hexdigest()
        recorded = (str(row["sha256"]), int(row["size_bytes"]), version.size_bytes)
        if not hmac.compare_digest(digest, expected) or recorded != (expected, len(data), len(data)):
            raise ArtifactMismatch(f"{where} no longer matches the SHA-256 recorded in the database")
        return data

    def collect_garbage(self, *, grace_seconds: float = 60.0) -> dict[str, Any]:
        """Nothing to collect: a blob exists only with its row. Files under ``.roundtable/patches``
        are left alone (they may belong to this checkout's SQLite store, which this one cannot see)."""
        return {"removed": [], "kept_recent": []}


def open_patch_artifacts(
    db: Database, paths: ProjectPaths, files: SafeFiles, *, max_bytes: int
) -> PatchArtifactStore:
    """The artifact store of ``db``'s backend: files with SQLite, ``patch_blobs`` rows with PostgreSQL."""
    disk = DiskPatchArtifacts(db, paths, files, max_bytes=max_bytes)
    return DatabasePatchArtifacts(db, disk) if db.backend == "postgresql" else disk
