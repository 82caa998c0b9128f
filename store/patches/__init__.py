"""Patch versions: parsing diffs, immutable artifacts, checking them against the working tree.

A version's bytes live behind one interface, :class:`PatchArtifactStore`: files under
``.roundtable/patches`` with SQLite (:class:`DiskPatchArtifacts`), ``patch_blobs`` rows with
PostgreSQL (:class:`DatabasePatchArtifacts`); :func:`open_patch_artifacts` picks the store's.

Applying a proposal's patch (which moves the proposal's state) is a work operation:
:class:`store.work.WorkspaceStore` builds on what this package exports.
"""

from __future__ import annotations

from store.patches._artifacts import (
    PatchArtifactStore,
    PatchVersion,
    StagedPatch,
    get_version,
    list_versions,
    patch_relative_path,
)
from store.patches._db_artifacts import DatabasePatchArtifacts, open_patch_artifacts
from store.patches._diffs import decode_patch, parse_diff
from store.patches._disk_artifacts import DiskPatchArtifacts
from store.patches._validate import PatchValidator, Validation
from store.patches._worktree import (
    FileState,
    RepoFiles,
    read_rollback_artifact,
    state_hash,
    write_rollback_artifact,
)

__all__ = [
    "DatabasePatchArtifacts",
    "DiskPatchArtifacts",
    "FileState",
    "PatchArtifactStore",
    "PatchValidator",
    "PatchVersion",
    "RepoFiles",
    "StagedPatch",
    "Validation",
    "decode_patch",
    "get_version",
    "list_versions",
    "open_patch_artifacts",
    "parse_diff",
    "patch_relative_path",
    "read_rollback_artifact",
    "state_hash",
    "write_rollback_artifact",
]
