"""Launch records: the :class:`Launch` row type, its statuses and the moves between them.

A launch moves through :class:`LaunchStatus` along the edges of :data:`TRANSITIONS`::

    requested ──> starting ──> running ──> exited | failed | timeout | cancelled
        │             │
        └─────────────┴──> failed | cancelled

:mod:`store.launches._store` enforces the table when it moves a row. This module also holds the
bounds a row's fields are kept within: IDs and names are labels (:func:`~store._text.check_label`),
the log tail is bounded (:data:`MAX_LOG_TAIL_BYTES`, the end is kept) and so are reasons and errors.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from store._rows import as_dict, from_row
from store._text import MAX_LABEL_CHARS, check_label, check_text

__all__ = [
    "ACTIVE_STATUSES",
    "MAX_ERROR_CHARS",
    "MAX_LABEL_CHARS",
    "MAX_LOG_TAIL_BYTES",
    "NO_GRANT_EXIT",
    "PROPOSAL_CLOSED",
    "PROVIDER_FAILED",
    "PROVIDER_FAILED_EXIT",
    "TERMINAL_STATUSES",
    "TRANSITIONS",
    "Launch",
    "LaunchStatus",
    "bounded_tail",
    "check_image",
    "check_label",
    "check_optional_label",
    "check_text",
    "launch_from_row",
    "truncate",
]

MAX_LOG_TAIL_BYTES = 64 * 1024
MAX_ERROR_CHARS = 2_000

PROVIDER_FAILED_EXIT = 4
"""The exit status by which a role container says its provider failed (``roles.runner``'s
``EXIT_PROVIDER_FAILED``; a test keeps the two equal)."""
NO_GRANT_EXIT = 3
"""The exit status by which a role container says its grant was refused (``roles.channel``'s
``EXIT_NO_GRANT``; a test keeps the two equal)."""
PROPOSAL_CLOSED = "proposal_closed"
"""The reason of a launch cut short because its proposal left review (accepted, rejected, ...)
while it ran: the transition revoked its capability, so the container's next call was refused."""
PROVIDER_FAILED = "provider_failed"
"""The reason of a launch whose container said its provider failed when the supervisor's model
gateway saw no failure of its own (otherwise the gateway's reason is used)."""


class LaunchStatus(StrEnum):
    """Where a role launch is in its life."""

    REQUESTED = "requested"
    STARTING = "starting"
    RUNNING = "running"
    EXITED = "exited"
    FAILED = "failed"
    TIMEOUT = "timeout"
    CANCELLED = "cancelled"


ACTIVE_STATUSES = frozenset({LaunchStatus.REQUESTED, LaunchStatus.STARTING, LaunchStatus.RUNNING})
TERMINAL_STATUSES = frozenset(LaunchStatus) - ACTIVE_STATUSES

TRANSITIONS: dict[LaunchStatus, frozenset[LaunchStatus]] = {
    LaunchStatus.REQUESTED: frozenset({LaunchStatus.STARTING, LaunchStatus.FAILED, LaunchStatus.CANCELLED}),
    LaunchStatus.STARTING: frozenset({LaunchStatus.RUNNING, LaunchStatus.FAILED, LaunchStatus.CANCELLED}),
    LaunchStatus.RUNNING: frozenset(
        {LaunchStatus.EXITED, LaunchStatus.FAILED, LaunchStatus.TIMEOUT, LaunchStatus.CANCELLED}
    ),
    LaunchStatus.EXITED: frozenset(),
    LaunchStatus.FAILED: frozenset(),
    LaunchStatus.TIMEOUT: frozenset(),
    LaunchStatus.CANCELLED: frozenset(),
}
"""For each status, the statuses a launch may move to next. Terminal statuses go nowhere."""


@dataclass(frozen=True)
class Launch:
    """One ``role_launches`` row."""

    id: str
    role: str
    agent_id: str
    proposal_id: str
    task_id: str | None
    image: str
    container_id: str | None
    status: LaunchStatus
    exit_code: int | None
    reason: str | None
    error: str | None
    requested_at: str
    started_at: str | None
    ended_at: str | None
    updated_at: str
    log_tail: str | None
    provider: str | None
    usage: dict[str, Any] | None
    owner: str | None = None

    @property
    def active(self) -> bool:
        """Whether the launch has not reached a terminal status."""
        return self.status in ACTIVE_STATUSES

    def to_dict(self, *, with_log: bool = False) -> dict[str, Any]:
        """The JSON shape used by every interface; the log tail only when asked for."""
        out = as_dict(self, exclude=("updated_at", "log_tail", "owner"))
        if with_log:
            out["log_tail"] = self.log_tail
        return out


def launch_from_row(row: sqlite3.Row) -> Launch:
    """The :class:`Launch` a ``role_launches`` row holds."""
    usage = json.loads(row["usage"]) if row["usage"] else None
    return from_row(Launch, row, status=LaunchStatus(row["status"]), usage=usage)


def bounded_tail(text: str, limit: int = MAX_LOG_TAIL_BYTES) -> str:
    """The end of ``text`` that fits in ``limit`` UTF-8 bytes (a cut character is dropped)."""
    raw = text.encode("utf-8", errors="replace")
    if len(raw) <= limit:
        return text
    return raw[-limit:].decode("utf-8", errors="ignore")


def check_optional_label(name: str, value: object) -> str | None:
    """``None``, or ``value`` checked by :func:`~store._text.check_label` (an ID or a name)."""
    return None if value is None else check_label(name, value)


def check_image(value: object) -> str:
    """An image reference (``name:tag``, ``registry/name@sha256:...``): short text, no control characters."""
    return check_text("image", value, limit=MAX_LABEL_CHARS)


def truncate(value: str | None, limit: int) -> str | None:
    """The first ``limit`` characters of ``value`` (``None`` stays ``None``)."""
    return None if value is None else value[:limit]
