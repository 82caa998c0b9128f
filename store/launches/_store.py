"""The launch store: creates ``role_launches`` rows and moves them, each move with its ``role.*`` event.

The records, their statuses and the allowed moves (:data:`TRANSITIONS`) are in
:mod:`store.launches._records`; this module writes them. Every move is one ``BEGIN IMMEDIATE``
transaction that updates the row and appends its event, so a reader never sees a status without
its event or an event without its status. A move from a state the table does not allow (for
example finishing a launch twice) is a :class:`Conflict` and changes nothing. The events are the
ones CONTRACTS.md names, plus one for the container id:

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
from typing import Any

from store._ids import new_id, utc_now_iso
from store.db import Database
from store.errors import Conflict, InvalidArgument, NotFound
from store.events import append_event
from store.launches._records import (
    ACTIVE_STATUSES,
    MAX_ERROR_CHARS,
    MAX_LABEL_CHARS,
    MAX_LOG_TAIL_BYTES,
    NO_GRANT_EXIT,
    PROPOSAL_CLOSED,
    PROVIDER_FAILED,
    PROVIDER_FAILED_EXIT,
    TERMINAL_STATUSES,
    TRANSITIONS,
    Launch,
    LaunchStatus,
    bounded_tail,
    check_image,
    check_label,
    check_optional_label,
    check_text,
    launch_from_row,
    truncate,
)

__all__ = [
    "ACTIVE_STATUSES",
    "MAX_ERROR_CHARS",
    "MAX_LOG_TAIL_BYTES",
    "TERMINAL_STATUSES",
    "TRANSITIONS",
    "Launch",
    "LaunchStatus",
    "LaunchStore",
    "bounded_tail",
]

_ACTOR = "supervisor"


@dataclass(frozen=True)
class _End:
    status: LaunchStatus
    reason: str | None
    error: str | None


def _end(
    current: Launch,
    status: LaunchStatus,
    exit_code: int | None,
    reason: str | None,
    error: str | None,
    closed_by: str | None = None,
) -> _End:
    """How a launch really ends: a noted failure (see :meth:`LaunchStore.note_failure`) wins over an
    ``exited`` or ``failed`` end; a provider-failed exit without one gets the generic reason; a
    refused-grant exit after the proposal left review (``closed_by``: its grant's revocation
    reason) says so."""
    if status not in (LaunchStatus.EXITED, LaunchStatus.FAILED):
        return _End(status, reason, error)
    if current.active and current.reason is not None:
        return _End(LaunchStatus.FAILED, current.reason, current.error or error)
    if status is LaunchStatus.FAILED and reason == "nonzero_exit":
        if exit_code == PROVIDER_FAILED_EXIT:
            message = "the role's provider failed and the model gateway recorded no failure; see the log"
            return _End(status, PROVIDER_FAILED, error or message)
        if exit_code == NO_GRANT_EXIT and closed_by is not None:
            message = (
                f"the proposal left review while the launch ran ({closed_by}): its capability was revoked"
            )
            return _End(status, PROPOSAL_CLOSED, message)
    return _End(status, reason, error)


def _closed_by(conn: sqlite3.Connection, launch_id: str) -> str | None:
    """Why the launch's grant was revoked, if the proposal leaving review revoked it."""
    row = conn.execute(
        "SELECT revoked_reason FROM capability_grants"
        " WHERE launch_id = ? AND revoked_reason LIKE 'proposal %'",
        (launch_id,),
    ).fetchone()
    return None if row is None else str(row[0])


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
        return launch_from_row(row)

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
        return [launch_from_row(row) for row in rows]

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

        ``owner`` names the supervisor instance running it (see :mod:`supervisor.launch._ownership`).
        """
        fields = {
            "role": check_label("role", role),
            "agent_id": check_label("agent_id", agent_id),
            "proposal_id": check_label("proposal_id", proposal_id),
            "image": check_image(image),
            "task_id": check_optional_label("task_id", task_id),
            "provider": check_optional_label("provider", provider),
            "owner": check_optional_label("owner", owner),
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
        container_id = check_label("container_id", container_id)
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
        """Move to a terminal ``status``; ``role.exited`` for ``exited``, ``role.failed`` otherwise.

        A cause noted with :meth:`note_failure` wins over an ``exited`` or ``failed`` end: the launch
        ends ``failed`` with the noted reason and error. Without one, a container that exits with
        :data:`PROVIDER_FAILED_EXIT` ends ``failed`` with reason :data:`PROVIDER_FAILED`.
        """
        status = LaunchStatus(status)
        if status not in TERMINAL_STATUSES:
            raise InvalidArgument(f"{status} is not a terminal launch status")
        if exit_code is not None and (isinstance(exit_code, bool) or not isinstance(exit_code, int)):
            raise InvalidArgument("exit_code must be an integer")
        if status is LaunchStatus.EXITED and exit_code not in (None, 0):
            raise InvalidArgument("a launch that exited non-zero is failed, not exited")

        def write(conn: sqlite3.Connection) -> Launch:
            closed_by = _closed_by(conn, launch_id)
            end = _end(self._row(conn, launch_id), status, exit_code, reason, error, closed_by)
            columns: dict[str, Any] = {
                "ended_at": None,
                "exit_code": exit_code,
                "reason": truncate(end.reason, MAX_LABEL_CHARS),
                "error": truncate(end.error, MAX_ERROR_CHARS),
                "log_tail": None if log_tail is None else bounded_tail(log_tail),
                "usage": None if usage is None else json.dumps(usage, sort_keys=True),
            }
            payload: dict[str, Any] = {
                "status": str(end.status),
                "exit_code": exit_code,
                "reason": columns["reason"],
                "error": columns["error"],
            }
            event = "role.exited" if end.status is LaunchStatus.EXITED else "role.failed"
            return self._move(launch_id, end.status, event, columns, payload, conn)

        return self.db.write(write)

    def note_failure(self, launch_id: str, reason: str, error: str) -> Launch:
        """Note why an active launch's work failed, before its end is recorded (the first note wins).

        The supervisor notes what its model gateway saw; :meth:`finish` then ends the launch
        ``failed`` with this reason and error, whatever exit status the container reports. The row
        keeps the note in its ``reason`` and ``error`` columns meanwhile; no event is written until
        the launch ends.
        """
        reason = check_label("reason", reason)
        error = check_text("error", error, limit=MAX_ERROR_CHARS)

        def write(conn: sqlite3.Connection) -> Launch:
            current = self._row(conn, launch_id)
            if not current.active:
                raise Conflict(f"launch {launch_id} is {current.status}; its end is already recorded")
            if current.reason is None:
                conn.execute(
                    "UPDATE role_launches SET reason = ?, error = ?, updated_at = ? WHERE id = ?",
                    (reason, error, utc_now_iso(), launch_id),
                )
            return self._row(conn, launch_id)

        return self.db.write(write)

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
            return [self.fail_in(conn, row["id"], reason) for row in rows if row["id"] not in kept]

        return self.db.write(write)

    def fail_in(self, conn: sqlite3.Connection, launch_id: str, reason: str) -> Launch:
        """Fail an active launch with ``reason`` in the caller's write transaction (the reapers' move)."""
        payload = {"status": "failed", "exit_code": None, "reason": reason, "error": None}
        columns = {"ended_at": None, "reason": reason}
        return self._move(launch_id, LaunchStatus.FAILED, "role.failed", columns, payload, conn)

    # -- internals ---------------------------------------------------------------------------------

    def _row(self, conn: sqlite3.Connection, launch_id: str) -> Launch:
        row = conn.execute("SELECT * FROM role_launches WHERE id = ?", (launch_id,)).fetchone()
        if row is None:
            raise NotFound(f"no launch {launch_id!r}")
        return launch_from_row(row)

    def _move(
        self,
        launch_id: str,
        to: LaunchStatus,
        event: str,
        columns: dict[str, Any],
        payload: dict[str, Any],
        conn: sqlite3.Connection | None = None,
    ) -> Launch:
        """Check the move against :data:`TRANSITIONS`, update the row and append the event.

        In the caller's transaction ``conn``, else in a new one. A column given as ``None`` among
        the timestamp columns means "now".
        """
        if conn is None:
            return self.db.write(lambda c: self._move(launch_id, to, event, columns, payload, c))
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
