"""The work vocabulary shared by tasks, proposals, reviews and decisions, and argument checks.

Statuses, risks, vote words and decision outcomes are defined once here; the MCP argument models
and the CLI use these same tuples, so the three never disagree.
"""

from __future__ import annotations

from typing import Any

from store._text import check_label, check_text
from store.errors import InvalidArgument

__all__ = [
    "ADVISORY_ROLE",
    "APPROVING_VOTES",
    "BLOCKING_VOTES",
    "DECISION_OUTCOMES",
    "MAX_BODY_CHARS",
    "MAX_LIST_ITEMS",
    "MAX_TITLE_CHARS",
    "PROPOSAL_STATUSES",
    "REVIEWER_ROLE",
    "RISKS",
    "SECURITY_ROLE",
    "TASK_PRIORITIES",
    "TASK_STATUSES",
    "TERMINAL_STATUSES",
    "VOTES",
    "check_agent_id",
    "check_choice",
    "check_object_id",
    "check_text",
    "check_text_list",
    "page_limit",
]

MAX_TITLE_CHARS = 1_000
MAX_BODY_CHARS = 200_000
MAX_LIST_ITEMS = 200

TASK_PRIORITIES = ("low", "normal", "high", "urgent")
TASK_STATUSES = ("open", "in_progress", "done", "cancelled")
RISKS = ("low", "normal", "high", "critical")

PROPOSAL_STATUSES = (
    "pending",
    "in_review",
    "revision_requested",
    "accepted",
    "rejected",
    "withdrawn",
    "applied",
)
"""CONTRACTS' six statuses plus ``applied`` (after a successful ``patch.apply``)."""

TERMINAL_STATUSES = frozenset({"rejected", "withdrawn", "applied"})
"""No new patch version, review round or vote once a proposal is here."""

VOTES = ("approve", "approve_with_notes", "revise", "reject", "veto", "abstain")
APPROVING_VOTES = frozenset({"approve", "approve_with_notes"})
BLOCKING_VOTES = frozenset({"reject", "veto"})

DECISION_OUTCOMES = ("accepted", "rejected", "withdrawn", "deferred", "noted")

REVIEWER_ROLE = "Reviewer"
SECURITY_ROLE = "Security"
ADVISORY_ROLE = "MemoryOracle"


def check_object_id(name: str, value: object) -> str:
    """An ID argument (``T-...``, ``P-...``, ...): a short token of safe characters."""
    return check_label(name, value)


def check_agent_id(value: object, name: str = "agent_id") -> str:
    """An agent ID argument (a roster key such as ``reviewer-1``)."""
    return check_object_id(name, value)


def check_choice(name: str, value: object, choices: tuple[str, ...]) -> str:
    """One of a fixed vocabulary."""
    if not isinstance(value, str) or value not in choices:
        raise InvalidArgument(f"{name} must be one of: {', '.join(choices)}")
    return value


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
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= maximum:
        raise InvalidArgument(f"limit must be an integer from 1 to {maximum}")
    return value


def json_list(value: Any) -> list[Any]:
    """A JSON column that holds a list (defensive against hand-edited rows)."""
    return list(value) if isinstance(value, list) else []
