"""The work vocabulary shared by tasks, proposals, reviews and decisions, and argument checks.

Every lifecycle word is a member of one :class:`~enum.StrEnum` here, its value the contract string
(CONTRACTS.md, "Work tools"): :class:`ProposalStatus` (with its two closed sets), :class:`TaskStatus`,
:class:`TaskPriority`, :class:`Risk`, :class:`Vote` (with its approving and blocking sets) and
:class:`DecisionOutcome`. The store checks arguments against them (:func:`check_choice`); the MCP
argument models advertise the ``...Word`` literals below, which a test holds equal to the enums, so
the store, the tools and their schemas never disagree. A member is a ``str``: JSON answers, events
and SQLite rows hold the plain string.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Any, ClassVar, Literal, TypeVar

from store._text import check_int, check_label, check_text
from store.errors import InvalidArgument

__all__ = [
    "ADVISORY_ROLE",
    "MAX_BODY_CHARS",
    "MAX_LIST_ITEMS",
    "MAX_TITLE_CHARS",
    "REVIEWER_ROLE",
    "SECURITY_ROLE",
    "DecisionOutcome",
    "DecisionOutcomeWord",
    "ProposalStatus",
    "ProposalStatusWord",
    "Risk",
    "RiskWord",
    "TaskPriority",
    "TaskPriorityWord",
    "TaskStatus",
    "TaskStatusWord",
    "Vote",
    "VoteWord",
    "check_agent_id",
    "check_choice",
    "check_object_id",
    "check_text",
    "check_text_list",
    "page_limit",
    "page_query",
]

MAX_TITLE_CHARS = 1_000
MAX_BODY_CHARS = 200_000
MAX_LIST_ITEMS = 200

"""The range of an SQLite integer: a larger Python int cannot be bound to a query at all."""


class TaskPriority(StrEnum):
    """How urgent a task is."""

    LOW = "low"
    NORMAL = "normal"
    HIGH = "high"
    URGENT = "urgent"


class TaskStatus(StrEnum):
    """Where a task is in its life."""

    OPEN = "open"
    IN_PROGRESS = "in_progress"
    DONE = "done"
    CANCELLED = "cancelled"


class Risk(StrEnum):
    """The risk of a task or a proposal (``policy.security_risks`` adds a Security vote)."""

    LOW = "low"
    NORMAL = "normal"
    HIGH = "high"
    CRITICAL = "critical"


class ProposalStatus(StrEnum):
    """Where a proposal is: CONTRACTS' six statuses plus ``applied`` (after ``patch.apply``).

    ``pending`` → ``in_review`` (``proposal.request_review``) ⇄ ``revision_requested`` /
    ``accepted`` as consensus moves (a later veto or a new patch version takes ``accepted`` back to
    review); ``rejected`` and ``withdrawn`` by a decision, ``applied`` by ``patch.apply``.
    """

    PENDING = "pending"
    IN_REVIEW = "in_review"
    REVISION_REQUESTED = "revision_requested"
    ACCEPTED = "accepted"
    REJECTED = "rejected"
    WITHDRAWN = "withdrawn"
    APPLIED = "applied"

    TERMINAL: ClassVar[frozenset[ProposalStatus]]
    """Final: no new patch version, review round, vote or status move, and no second reject or withdraw.
    ``accepted`` is not among them: a later veto or patch version moves it back to review."""

    CLOSED_TO_LAUNCHES: ClassVar[frozenset[ProposalStatus]]
    """Out of review (``accepted`` or :attr:`TERMINAL`): no oracle is launched and no capability is
    granted for it, and entering one revokes the live grants (:func:`~store.work.leave_review`)."""


ProposalStatus.TERMINAL = frozenset(
    {ProposalStatus.REJECTED, ProposalStatus.WITHDRAWN, ProposalStatus.APPLIED}
)
ProposalStatus.CLOSED_TO_LAUNCHES = ProposalStatus.TERMINAL | {ProposalStatus.ACCEPTED}


class Vote(StrEnum):
    """A reviewer's vote word."""

    APPROVE = "approve"
    APPROVE_WITH_NOTES = "approve_with_notes"
    REVISE = "revise"
    REJECT = "reject"
    VETO = "veto"
    ABSTAIN = "abstain"

    APPROVING: ClassVar[frozenset[Vote]]
    """The votes that count towards ``policy.required_approvals``."""

    BLOCKING: ClassVar[frozenset[Vote]]
    """The votes that, while they count, keep a proposal from consensus."""


Vote.APPROVING = frozenset({Vote.APPROVE, Vote.APPROVE_WITH_NOTES})
Vote.BLOCKING = frozenset({Vote.REJECT, Vote.VETO})


class DecisionOutcome(StrEnum):
    """What a decision records (see :mod:`store.work._decisions` for each one's effect)."""

    ACCEPTED = "accepted"
    REJECTED = "rejected"
    WITHDRAWN = "withdrawn"
    DEFERRED = "deferred"
    NOTED = "noted"


# The same words as literal types, for the pydantic argument models of the MCP tools (a strict
# model takes a string for a Literal but not for an Enum, and a Literal keeps each schema inline).
TaskPriorityWord = Literal["low", "normal", "high", "urgent"]
TaskStatusWord = Literal["open", "in_progress", "done", "cancelled"]
RiskWord = Literal["low", "normal", "high", "critical"]
ProposalStatusWord = Literal[
    "pending", "in_review", "revision_requested", "accepted", "rejected", "withdrawn", "applied"
]
VoteWord = Literal["approve", "approve_with_notes", "revise", "reject", "veto", "abstain"]
DecisionOutcomeWord = Literal["accepted", "rejected", "withdrawn", "deferred", "noted"]

REVIEWER_ROLE = "Reviewer"
SECURITY_ROLE = "Security"
ADVISORY_ROLE = "MemoryOracle"

_E = TypeVar("_E", bound=StrEnum)


def check_object_id(name: str, value: object) -> str:
    """An ID argument (``T-...``, ``P-...``, ...): a short token of safe characters."""
    return check_label(name, value)


def check_agent_id(value: object, name: str = "agent_id") -> str:
    """An agent ID argument (a roster key such as ``reviewer-1``)."""
    return check_object_id(name, value)


def check_choice(name: str, value: object, choices: type[_E]) -> _E:
    """The member of ``choices`` whose value ``value`` is, or :class:`InvalidArgument`."""
    if isinstance(value, str):
        for member in choices:
            if member.value == value:
                return member
    raise InvalidArgument(f"{name} must be one of: {', '.join(choices)}")


def check_text_list(name: str, value: object, *, limit: int = MAX_TITLE_CHARS) -> list[str]:
    """A list of short nonblank strings (affected resources, expected tests)."""
    if not isinstance(value, list):
        raise InvalidArgument(f"{name} must be a list of strings")
    if len(value) > MAX_LIST_ITEMS:
        raise InvalidArgument(f"{name} holds more than {MAX_LIST_ITEMS} items")
    return [check_text(f"{name}[{index}]", item, limit=limit) for index, item in enumerate(value)]


def page_limit(value: object, *, default: int = 50, maximum: int = 500) -> int:
    """A page size: 1..maximum."""
    if value is None:
        return default
    return check_int("limit", value, minimum=1, maximum=maximum)


def page_query(
    table: str, filters: Mapping[str, str | None], *, cursor: object, limit: object
) -> tuple[str, list[Any], int]:
    """One page of ``table``, oldest first (IDs sort by creation time): its SQL, parameters and size.

    ``filters`` maps a column to its checked value (``None``: no filter). The query asks for one row
    more than the page, so the caller knows whether a next page exists.
    """
    where = ["1 = 1"]  # portable: PostgreSQL wants a boolean
    params: list[Any] = []
    for column, value in filters.items():
        if value is not None:
            where.append(f"{column} = ?")
            params.append(value)
    if cursor not in (None, ""):
        where.append("id > ?")
        params.append(check_object_id("cursor", cursor))
    count = page_limit(limit)
    params.append(count + 1)
    return f"SELECT * FROM {table} WHERE {' AND '.join(where)} ORDER BY id LIMIT ?", params, count


def json_list(value: Any) -> list[Any]:
    """A JSON column that holds a list (defensive against hand-edited rows)."""
    return list(value) if isinstance(value, list) else []
