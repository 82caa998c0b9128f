"""SQLite's patch artifacts: immutable files under ``.roundtable/patches/<proposal_id>/v<N>.diff``.

Writing a version is two steps, in this order:

1. :meth:`DiskPatchArtifacts.stage` writes the file durably (temporary name in the same directory
   opened ``O_EXCL``, fsync, ``os.link`` to the canonical name, which refuses an existing target,
   then fsync of the directory). A file is never overwritten.
2. :meth:`DiskPatchArtifacts.insert_row`, inside the caller's write transaction, checks that the
   file is still there with the expected size and SHA-256 and only then inserts the
   ``patch_versions`` row. So a row never names a missing file.

A crash between the two steps leaves an orphan file and no row; :meth:`collect_garbage` (``roundtable
gc``) removes orphans and stray temporary files while holding the write lock, after a grace period
so that it never races a writer that is between the two steps.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import stat
import time
from typing import Any

from store._project import STATE_DIR_NAME, ProjectPaths
from store.db import Database
from store.errors import ArtifactMismatch, Conflict
from store.files import TEMP_PREFIX, SafeFiles, create_file_at, open_dir, opened_dir
from store.patches._artifacts import (
    PATCHES_DIR_NAME,
    PatchArtifactStore,
    PatchVersion,
    StagedPatch,
    patch_relative_path,
    record_version,
)

__all__ = ["DiskPatchArtifacts"]


class DiskPatchArtifacts(PatchArtifactStore):
    """Patch versions as read-only files under the project root, read by the safe reader."""

    backend = "sqlite"

    def __init__(self, db: Database, paths: ProjectPaths, files: SafeFiles, *, max_bytes: int):
        self.db = db
        self.paths = paths
        self.files = files
        self.max_bytes = max_bytes

    # -- writing -------------------------------------------------------------------------------

    def stage(self, proposal_id: str, version: int, data: bytes, files: list[str]) -> StagedPatch:
        """Step 1: write the file durably at its canonical path; never overwrite one."""
        parts = patch_relative_path(proposal_id, version)
        with opened_dir(self.paths.root, parts[:-1], create=True) as dir_fd:
            try:
                create_file_at(dir_fd, parts[-1], data)
            except FileExistsError:
                raise Conflict(
                    f"patch file {'/'.join(parts)} already exists (a concurrent attach, or a file left by "
                    "an interrupted write: run `roundtable gc`); nothing was changed"
                ) from None
        digest = hashlib.sha256(data).hexdigest()
        return StagedPatch(proposal_id, version, digest, len(data), tuple(files), "/".join(parts))

    def insert_row(self, conn: sqlite3.Connection, staged: StagedPatch, *, actor: str) -> PatchVersion:
        """Step 2, inside the write transaction: verify the durable file, then record it."""
        data = self._read(staged.proposal_id, staged.version)
        if data is None:
            raise Conflict(f"patch file {staged.path} disappeared before it was recorded; retry")
        if len(data) != staged.size_bytes or hashlib.sha256(data).hexdigest() != staged.sha256:
            raise ArtifactMismatch(f"patch file {staged.path} changed before it was recorded")
        return record_version(conn, staged, actor=actor)

    def discard(self, staged: StagedPatch) -> None:
        """Remove a staged file whose row was not written (the transaction failed)."""

        def unrecorded(conn: sqlite3.Connection) -> bool:
            row = conn.execute(
                "SELECT 1 FROM patch_versions WHERE proposal_id = ? AND version = ?",
                (staged.proposal_id, staged.version),
            ).fetchone()
            return row is None

        # Under the write lock, like gc, so a row can never be written for a file removed here.
        def remove(conn: sqlite3.Connection) -> None:
            if unrecorded(conn):
                self._remove_file(staged.proposal_id, f"v{staged.version}.diff")

        self.db.write(remove)

    # -- reading -------------------------------------------------------------------------------

    def _read(self, proposal_id: str, version: int) -> bytes | None:
        try:
            found = self.files.read_unverified(
                patch_relative_path(proposal_id, version), max_bytes=self.max_bytes
            )
        except ArtifactMismatch:  # the safe reader's word for "missing"
            return None
        return found.data

    def read_verified(self, version: PatchVersion) -> bytes:
        """The bytes of a recorded version, read by the safe reader and checked against its SHA-256."""
        found = self.files.read_artifact(
            patch_relative_path(version.proposal_id, version.version),
            expected_sha256=version.sha256,
            max_bytes=self.max_bytes,
        )
        return found.data

    # -- garbage collection --------------------------------------------------------------------

    def collect_garbage(self, *, grace_seconds: float = 60.0) -> dict[str, Any]:
        """Remove patch files no row names and stray temporary files older than ``grace_seconds``."""
        return self.db.write(lambda conn: self._collect(conn, grace_seconds))

    def _collect(self, conn: sqlite3.Connection, grace_seconds: float) -> dict[str, Any]:
        recorded = {(row[0], row[1]) for row in conn.execute("SELECT proposal_id, path FROM patch_versions")}
        removed: list[str] = []
        kept_recent: list[str] = []
        cutoff = time.time() - grace_seconds
        try:
            top_fd, _ = open_dir(self.paths.root, (STATE_DIR_NAME, PATCHES_DIR_NAME))
        except FileNotFoundError:
            return {"removed": [], "kept_recent": []}
        try:
            for proposal_dir in sorted(os.listdir(top_fd)):
                prefix = f"{STATE_DIR_NAME}/{PATCHES_DIR_NAME}/{proposal_dir}"
                info = os.stat(proposal_dir, dir_fd=top_fd, follow_symlinks=False)
                if not stat.S_ISDIR(info.st_mode):
                    continue  # not ours to judge; the safe reader refuses anything odd
                with opened_dir(self.paths.root, (STATE_DIR_NAME, PATCHES_DIR_NAME, proposal_dir)) as dir_fd:
                    for name in sorted(os.listdir(dir_fd)):
                        entry = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
                        path = f"{prefix}/{name}"
                        is_artifact = name.startswith("v") and name.endswith(".diff")
                        if (proposal_dir, path) in recorded or not (
                            is_artifact or name.startswith(TEMP_PREFIX)
                        ):
                            continue
                        if entry.st_mtime > cutoff:
                            kept_recent.append(path)
                            continue
                        os.unlink(name, dir_fd=dir_fd)
                        removed.append(path)
                    os.fsync(dir_fd)
                    remaining = os.listdir(dir_fd)
                if not remaining:
                    exists = conn.execute("SELECT 1 FROM proposals WHERE id = ?", (proposal_dir,)).fetchone()
                    if exists is None:
                        os.rmdir(proposal_dir, dir_fd=top_fd)
            os.fsync(top_fd)
        finally:
            os.close(top_fd)
        return {"removed": removed, "kept_recent": kept_recent}

    def _remove_file(self, proposal_id: str, name: str) -> None:
        try:
            with opened_dir(self.paths.root, (STATE_DIR_NAME, PATCHES_DIR_NAME, proposal_id)) as dir_fd:
                os.unlink(name, dir_fd=dir_fd)
                os.fsync(dir_fd)
                empty = not os.listdir(dir_fd)
            if empty:
                with opened_dir(self.paths.root, (STATE_DIR_NAME, PATCHES_DIR_NAME)) as top_fd:
                    os.rmdir(proposal_id, dir_fd=top_fd)
        except OSError:
            pass  # best effort: gc removes whatever is left
