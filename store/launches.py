"""Role launch records: one ``role_launches`` row per container launch, and its ``role.*`` events.

A launch moves through :class:`LaunchStatus` along the edges of :data:`TRANSITIONS`::

    requested ──> starting ──> running ──> exited | failed | timeout | cancelled
        │             │
        └─────────────┴──> failed | cancelled

Every move is one ``BEGIN IMMEDIATE`` transaction that updates the row and appends its event, so a
reader never sees a status without its event or an event without its status. A move from a state
the table does not allow (for example finishing a launch twice) is a :class:`Conflict` and changes
nothing. The events are the ones CONTRACTS.md names, plus one for the container id:

=====================  ==============================================================
event                  written when
=====================  ==============================================================
role.launch_requested  the row is created (``requested``)
role.container_created the container exists and its id is recorded (``starting``)
role.started           Docker started the container (``running``)
role.exited            the container exited with status 0 (``exited``)
role.failed            ``failed``, ``timeout`` or ``cancelled``: ``payload.status`` says which
=====================  ==============================================================

The log tail is bounded (:data:`MAX_LOG_TAIL_BYTES`, the end is kept) and so are reasons and errors.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Collection
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from store.db import Database
from store.errors import Conflict, InvalidArgument, NotFound
from store.events import append_event
from store.ids import new_id, utc_now_iso

__all__ = [
    "ACTIVE_STATUSES",
    "MAX_LOG_TAIL_BYTES",
    "TERMINAL_STATUSES",
    "TRANSITIONS",
    "Launch",
    "LaunchStatus",
    "LaunchStore",
    "bounded_tail",
]

MAX_LOG_TAIL_BYTES = 64 * 1024
MAX_ERROR_CHARS = 2_000
_MAX_LABEL_CHARS = 200
_ACTOR = "supervisor"


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
        out: dict[str, Any] = {
            "id": self.id,
            "role": self.role,
            "agent_id": self.agent_id,
            "proposal_id": self.proposal_id,
            "task_id": self.task_id,
            "image": self.image,
            "container_id": self.container_id,
            "status": str(self.status),
            "exit_code": self.exit_code,
            "reason": self.reason,
            "error": self.error,
            "requested_at": self.requested_at,
            "started_at": self.started_at,
            "ended_at": self.ended_at,
            "provider": self.provider,
            "usage": self.usage,
        }
        if with_log:
            out["log_tail"] = self.log_tail
        return out


def _launch_from_row(row: sqlite3.Row) -> Launch:
    return Launch(
        id=row["id"],
        role=row["role"],
        agent_id=row["agent_id"],
        proposal_id=row["proposal_id"],
        task_id=row["task_id"],
        image=row["image"],
        container_id=row["container_id"],
        status=LaunchStatus(row["status"]),
        exit_code=row["exit_code"],
        reason=row["reason"],
        error=row["error"],
        requested_at=row["requested_at"],
        started_at=row["started_at"],
        ended_at=row["ended_at"],
        updated_at=row["updated_at"],
        log_tail=row["log_tail"],
        provider=row["provider"],
        usage=json.loads(row["usage"]) if row["usage"] else None,
        owner=row["owner"],
    )


def bounded_tail(text: str, limit: int = MAX_LOG_TAIL_BYTES) -> str:
    """The end of ``text`` that fits in ``limit`` UTF-8 bytes (a cut character is dropped)."""
    raw = text.encode("utf-8", errors="replace")
    if len(raw) <= limit:
        return text
    return raw[-limit:].decode("utf-8", errors="ignore")


def _label(name: str, value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidArgument(f"{name} must be a non-blank string")
    if len(value) > _MAX_LABEL_CHARS or "\x00" in value:
        raise InvalidArgument(f"{name} must be at most {_MAX_LABEL_CHARS} characters, without NUL")
    return value


def _optional_label(name: str, value: object) -> str | None:
    return None if value is None else _label(name, value)


def _bounded(value: str | None, limit: int) -> str | None:
    return None if value is None else value[:limit]


class LaunchStore:
    """Creates launch rows and moves them through their statuses, each move with its event."""

    def __init__(self, db: Database):
        self.db = db

    # -- reads -------------------------------------------------------------------------------------

    def get(self, launch_id: str) -> Launch:
        """The launch ``launch_id``, or :class:`NotFound`."""
        row = self.db.read(
            lambda conn: conn.execute("SELECT * FROM role_launches WHERE id = ?", (launch_id,)).fetchone()
        )
        if row is None:
            raise NotFound(f"no launch {launch_id!r}")
        return _launch_from_row(row)

    def find(
        self,
        *,
        proposal_id: str | None = None,
        statuses: Collection[LaunchStatus] = (),
        limit: int = 100,
    ) -> list[Launch]:
        """Launches in request order, optionally of one proposal and/or in some statuses."""
        clauses: list[str] = []
        params: list[Any] = []
        if proposal_id is not None:
            clauses.append("proposal_id = ?")
            params.append(proposal_id)
        if statuses:
            clauses.append(f"status IN ({','.join('?' * len(statuses))})")
            params.extend(str(status) for status in statuses)
        where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
        params.append(limit)
        rows = self.db.read(
            lambda conn: conn.execute(
                f"SELECT * FROM role_launches {where} ORDER BY requested_at, id LIMIT ?", params
            ).fetchall()
        )
        return [_launch_from_row(row) for row in rows]

    def active(self) -> list[Launch]:
        """Every launch not yet in a terminal status."""
        return self.find(statuses=ACTIVE_STATUSES, limit=1_000_000)

    # -- writes ------------------------------------------------------------------------------------

    def request(
        self,
        *,
        role: str,
        agent_id: str,
        proposal_id: str,
        image: str,
        task_id: str | None = None,
        provider: str | None = None,
        owner: str | None = None,
    ) -> Launch:
        """Create a launch in ``requested`` and write ``role.launch_requested``.

        ``owner`` names the supervisor instance running it (see :mod:`supervisor.ownership`).
        """
        fields = {
            "role": _label("role", role),
            "agent_id": _label("agent_id", agent_id),
            "proposal_id": _label("proposal_id", proposal_id),
            "image": _label("image", image),
            "task_id": _optional_label("task_id", task_id),
            "provider": _optional_label("provider", provider),
            "owner": _optional_label("owner", owner),
        }
        launch_id = new_id("launch")

        def write(conn: sqlite3.Connection) -> Launch:
            now = utc_now_iso()
            conn.execute(
                "INSERT INTO role_launches (id, role, agent_id, proposal_id, task_id, image, status,"
                " requested_at, updated_at, provider, owner)"
                " VALUES (:id, :role, :agent_id, :proposal_id, :task_id, :image, 'requested', :now, :now,"
                " :provider, :owner)",
                {"id": launch_id, "now": now, **fields},
            )
            launch = self._row(conn, launch_id)
            append_event(
                conn,
                "role.launch_requested",
                actor=_ACTOR,
                task_id=launch.task_id,
                proposal_id=launch.proposal_id,
                payload={
                    "launch_id": launch_id,
                    "role": launch.role,
                    "agent_id": launch.agent_id,
                    "image": launch.image,
                    "provider": launch.provider,
                },
            )
            return launch

        return self.db.write(write)

    def mark_starting(self, launch_id: str, container_id: str) -> Launch:
        """Record the created container's id (``requested`` → ``starting``), before it is started."""
        container_id = _label("container_id", container_id)
        return self._move(
            launch_id,
            LaunchStatus.STARTING,
            "role.container_created",
            {"container_id": container_id},
            {"container_id": container_id},
        )

    def mark_running(self, launch_id: str) -> Launch:
        """The container started (``starting`` → ``running``)."""
        return self._move(launch_id, LaunchStatus.RUNNING, "role.started", {"started_at": None}, {})

    def finish(
        self,
        launch_id: str,
        status: LaunchStatus,
        *,
        exit_code: int | None = None,
        reason: str | None = None,
        error: str | None = None,
        log_tail: str | None = None,
        usage: dict[str, Any] | None = None,
    ) -> Launch:
        """Move to a terminal ``status``; ``role.exited`` for ``exited``, ``role.failed`` otherwise."""
        status = LaunchStatus(status)
        if status not in TERMINAL_STATUSES:
            raise InvalidArgument(f"{status} is not a terminal launch status")
        if exit_code is not None and (isinstance(exit_code, bool) or not isinstance(exit_code, int)):
            raise InvalidArgument("exit_code must be an integer")
        if status is LaunchStatus.EXITED and exit_code not in (None, 0):
            raise InvalidArgument("a launch that exited non-zero is failed, not exited")
        columns: dict[str, Any] = {
            "ended_at": None,
            "exit_code": exit_code,
            "reason": _bounded(reason, _MAX_LABEL_CHARS),
            "error": _bounded(error, MAX_ERROR_CHARS),
            "log_tail": None if log_tail is None else bounded_tail(log_tail),
            "usage": None if usage is None else json.dumps(usage, sort_keys=True),
        }
        payload: dict[str, Any] = {"status": str(status), "exit_code": exit_code, "reason": columns["reason"]}
        event = "role.exited" if status is LaunchStatus.EXITED else "role.failed"
        return self._move(launch_id, status, event, columns, payload)

    def record_usage(self, launch_id: str, usage: dict[str, Any]) -> Launch:
        """Store the model usage the supervisor's gateway counted, with a ``role.model_usage`` event."""
        if not isinstance(usage, dict) or not all(
            isinstance(v, int) and not isinstance(v, bool) for v in usage.values()
        ):
            raise InvalidArgument("usage must be an object of integer counters")

        def write(conn: sqlite3.Connection) -> Launch:
            launch = self._row(conn, launch_id)
            conn.execute(
                "UPDATE role_launches SET usage = ?, updated_at = ? WHERE id = ?",
                (json.dumps(usage, sort_keys=True), utc_now_iso(), launch_id),
            )
            append_event(
                conn,
                "role.model_usage",
                actor=_ACTOR,
                task_id=launch.task_id,
                proposal_id=launch.proposal_id,
                payload={"launch_id": launch_id, **usage},
            )
            return self._row(conn, launch_id)

        return self.db.write(write)

    def fail_orphans(
        self, *, keep: Collection[str] = (), reason: str = "supervisor_restarted"
    ) -> list[Launch]:
        """Mark every active launch not in ``keep`` as ``failed`` (one transaction, one event each)."""
        kept = set(keep)

        def write(conn: sqlite3.Connection) -> list[Launch]:
            marks = ",".join("?" * len(ACTIVE_STATUSES))
            rows = conn.execute(
                f"SELECT id FROM role_launches WHERE status IN ({marks}) ORDER BY requested_at, id",
                [str(s) for s in ACTIVE_STATUSES],
            ).fetchall()
            return [
                self._move_in(
                    conn,
                    row["id"],
                    LaunchStatus.FAILED,
                    "role.failed",
                    {"ended_at": None, "reason": reason},
                    {"status": "failed", "exit_code": None, "reason": reason},
                )
                for row in rows
                if row["id"] not in kept
            ]

        return self.db.write(write)

    # -- internals ---------------------------------------------------------------------------------

    def _row(self, conn: sqlite3.Connection, launch_id: str) -> Launch:
        row = conn.execute("SELECT * FROM role_launches WHERE id = ?", (launch_id,)).fetchone()
        if row is None:
            raise NotFound(f"no launch {launch_id!r}")
        return _launch_from_row(row)

    def _move(
        self,
        launch_id: str,
        to: LaunchStatus,
        event: str,
        columns: dict[str, Any],
        payload: dict[str, Any],
    ) -> Launch:
        return self.db.write(lambda conn: self._move_in(conn, launch_id, to, event, columns, payload))

    def _move_in(
        self,
        conn: sqlite3.Connection,
        launch_id: str,
        to: LaunchStatus,
        event: str,
        columns: dict[str, Any],
        payload: dict[str, Any],
    ) -> Launch:
        """Check the move against :data:`TRANSITIONS`, update the row and append the event.

        A column given as ``None`` among the timestamp columns means "now".
        """
        current = self._row(conn, launch_id)
        if to not in TRANSITIONS[current.status]:
            raise Conflict(f"launch {launch_id} is {current.status}; it cannot become {to}")
        now = utc_now_iso()
        values = {
            key: (now if key in ("started_at", "ended_at") and value is None else value)
            for key, value in columns.items()
        }
        values.update(status=str(to), updated_at=now)
        assignments = ", ".join(f"{key} = :{key}" for key in values)
        conn.execute(f"UPDATE role_launches SET {assignments} WHERE id = :id", {**values, "id": launch_id})
        append_event(
            conn,
            event,
            actor=_ACTOR,
            task_id=current.task_id,
            proposal_id=current.proposal_id,
            payload={"launch_id": launch_id, "role": current.role, **payload},
        )
        return self._row(conn, launch_id)
