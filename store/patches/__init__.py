"""Patch versions: parsing diffs, immutable artifacts on disk, checking them against the working tree.

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
from store.patches._diffs import decode_patch, parse_diff
from store.patches._validate import PatchValidator, Validation
from store.patches._worktree import (
    FileState,
    RepoFiles,
    read_rollback_artifact,
    state_hash,
    write_rollback_artifact,
)

__all__ = [
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
    "parse_diff",
    "patch_relative_path",
    "read_rollback_artifact",
    "state_hash",
    "write_rollback_artifact",
]
