"""Review rounds whose reviewers run in containers: what the supervisor prepares for them.

Today: the test reviewer's workspace (:func:`stage_review_workspace`), the project's tracked files at
``HEAD`` with the patch under review applied, as the tar and manifest a test-reviewer launch reads
from its runtime directory (docs/containers.md, "The test reviewer").
"""

from __future__ import annotations

from supervisor.review._workspace import (
    DEFAULT_MAX_BYTES,
    REVIEW_MANIFEST,
    WORKSPACE_TAR,
    StagedWorkspace,
    stage_review_workspace,
)

__all__ = [
    "DEFAULT_MAX_BYTES",
    "REVIEW_MANIFEST",
    "WORKSPACE_TAR",
    "StagedWorkspace",
    "stage_review_workspace",
]
