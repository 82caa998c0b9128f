"""Review rounds that run: every configured voting reviewer launched in its own container.

:func:`run_review` launches a round's MemoryOracle and its configured reviewers at once;
:func:`reviewer_plan` turns one ``[launches."<agent id>"]`` section into a launch plan; the test
reviewer's tree under review (the files git tracks at ``HEAD`` with the patch applied) is staged by
:func:`stage_review_workspace`; :class:`ReviewService` is the runner a serving process hands its
tools. Names are exported lazily (PEP 562), so a server that never runs a round never imports the
Docker SDK.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from supervisor.review._plans import reviewer_plan
    from supervisor.review._run import ReviewerOutcome, ReviewRun, run_review
    from supervisor.review._service import ReviewService
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
    "ReviewRun",
    "ReviewService",
    "ReviewerOutcome",
    "StagedWorkspace",
    "reviewer_plan",
    "run_review",
    "stage_review_workspace",
]

_HOME = {
    "DEFAULT_MAX_BYTES": "_workspace",
    "REVIEW_MANIFEST": "_workspace",
    "WORKSPACE_TAR": "_workspace",
    "StagedWorkspace": "_workspace",
    "stage_review_workspace": "_workspace",
    "ReviewRun": "_run",
    "ReviewerOutcome": "_run",
    "run_review": "_run",
    "reviewer_plan": "_plans",
    "ReviewService": "_service",
}


def __getattr__(name: str) -> Any:
    """Import an exported name from its module on first use."""
    if name in _HOME:
        return getattr(import_module(f"supervisor.review.{_HOME[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
