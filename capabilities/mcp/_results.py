"""The pydantic models tool answers are built from, shared by several tools.

Each tool's answer model (a :class:`~capabilities.mcp._registry.ToolResult`) is built from these,
so its JSON schema, advertised as the tool's ``outputSchema``, describes exactly what the tool
answers: the handler validates the store's objects into the model and the model's dump is the
answer. Every model lets fields it does not name pass through (``extra="allow"``), so a field the
store adds later reaches callers without breaking a client that validates against the schema.
A key the store leaves out is left out of the answer too (optional fields default to absent).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from store.work import DecisionOutcomeWord, ProposalStatusWord, RiskWord, TaskPriorityWord, TaskStatusWord

__all__ = [
    "ApplyTransaction",
    "Check",
    "Consensus",
    "Decision",
    "Event",
    "MemoryEntry",
    "PatchVersion",
    "Proposal",
    "ProposalSummary",
    "ReviewRound",
    "Task",
    "TimelineEvent",
    "Vote",
]


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)


class MemoryEntry(_Open):
    """A memory entry as the memory tools answer it (the core projection)."""

    id: str
    scope: str
    kind: str
    title: str
    body_md: str
    source_event_id: int
    importance: int
    status: str
    created_at: str
    updated_at: str
    revision: int
    source_proposal_id: str | None
    checks: list[dict[str, Any]] | None = Field(default=None, description="Only on entries that have checks.")
    score: int | float | None = Field(default=None, description="Only in query answers.")


class Task(_Open):
    """A task."""

    id: str
    title: str
    body_md: str
    priority: TaskPriorityWord
    risk: RiskWord
    status: TaskStatusWord
    assignee: str | None
    created_by: str
    created_at: str
    updated_at: str


class PatchVersion(_Open):
    """One immutable patch version."""

    proposal_id: str
    version: int
    sha256: str
    size_bytes: int
    files: list[str]
    path: str
    created_by: str
    created_at: str


class ReviewRound(_Open):
    """A review round of one patch version: voting roles, candidates, the advisory oracle."""

    id: str
    proposal_id: str
    number: int
    patch_version: int
    voting_roles: list[str]
    candidates: list[dict[str, Any]]
    advisory: list[dict[str, Any]]
    status: str
    close_reason: str | None
    opened_by: str
    opened_at: str
    closed_at: str | None


class Consensus(_Open):
    """The consensus state of a proposal's current patch version."""

    patch_version: int
    approvals: int
    required: int
    blocking: list[dict[str, Any]]
    revisions_requested: list[dict[str, Any]]
    missing_roles: list[str]
    counting_vote_ids: list[str]
    reached: bool


class ProposalSummary(_Open):
    """A proposal's own fields (the lists of ``task.history``)."""

    id: str
    task_id: str
    agent_id: str
    title: str
    summary_md: str
    risk: RiskWord
    status: ProposalStatusWord
    current_version: int
    created_at: str
    updated_at: str


class Proposal(ProposalSummary):
    """A proposal with its current patch, latest review round and consensus."""

    affected_resources: list[str]
    expected_tests: list[str]
    rollback_notes_md: str
    created_by: str
    patch: PatchVersion | None
    review_round: ReviewRound | None
    consensus: Consensus
    versions: list[PatchVersion] | None = Field(
        default=None, description="Every patch version (in single-proposal answers)."
    )


class Vote(_Open):
    """One cast vote, bound to a patch version; ``counts`` says whether it counts now."""

    id: str
    proposal_id: str
    round_id: str
    agent_id: str
    role: str
    patch_version: int
    vote: str
    reason_md: str
    replaces: str | None
    actor: str
    created_at: str
    counts: bool


class Decision(_Open):
    """An immutable decision about a proposal or a task."""

    id: str
    task_id: str
    proposal_id: str | None
    outcome: DecisionOutcomeWord
    rationale_md: str
    patch_version: int | None
    supersedes: str | None
    decided_by: str
    created_at: str


class Event(_Open):
    """One row of the event log."""

    id: int
    type: str
    created_at: str
    actor: str
    credential_id: str | None
    task_id: str | None
    proposal_id: str | None
    payload: dict[str, Any]


class TimelineEvent(Event):
    """An event of a proposal's timeline, with what it refers to resolved."""

    patch: PatchVersion | None = Field(default=None, description="On patch events: the version.")
    vote: Vote | None = Field(default=None, description="On vote events: the vote, counting now or not.")
    launch: dict[str, Any] | None = Field(default=None, description="On events written by a launch.")
    decision: dict[str, Any] | None = Field(default=None, description="On decision events.")
    cited_memories: list[dict[str, Any]] | None = Field(
        default=None, description="On oracle warnings: each cited entry (or that it is missing)."
    )


class ApplyTransaction(_Open):
    """The record of one ``patch.apply``: before/after state hashes and the rollback artifact."""

    id: str
    proposal_id: str
    patch_version: int
    patch_sha256: str
    status: str
    files: list[str]
    before_hash: str
    after_hash: str | None
    rollback_path: str
    error: str | None
    actor: str
    started_at: str
    finished_at: str | None


class Check(_Open):
    """One validation check of a patch version."""

    name: str
    ok: bool
    detail: str | None = None
    skipped: bool | None = None
