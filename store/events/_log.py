"""The append-only event log.

Every state change writes its event through :func:`append_event` on the same connection, inside
the same transaction as the change, so the change and its event commit or roll back together.
Event IDs are integers that increase with commit order: writers are serialised by
``BEGIN IMMEDIATE``, so an ID taken inside a transaction is never overtaken by a later commit.
"""

from __future__ import annotations

import contextvars
import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from store._ids import utc_now_iso

__all__ = [
    "LOCAL_CREDENTIAL",
    "Event",
    "acting_credential",
    "append_event",
    "current_credential",
    "event_from_row",
    "get_event",
    "list_events",
]

LOCAL_CREDENTIAL = "local"
"""The credential of the operator's own process (stdio, the CLI): no token, the file system."""

# Which credential the change being written came through. The transport that authenticated the
# caller sets it around the whole call (an MCP tool call, an HTTP request); worker threads inherit
# it, since anyio copies the context into them. Callers never pass it, so no argument can forge it.
_CREDENTIAL: contextvars.ContextVar[str] = contextvars.ContextVar(
    "roundtable_credential", default=LOCAL_CREDENTIAL
)


@contextmanager
def acting_credential(credential_id: str | None) -> Iterator[None]:
    """Record ``credential_id`` (``None``: the local process) on every event and audit row written inside."""
    reset = _CREDENTIAL.set(credential_id or LOCAL_CREDENTIAL)
    try:
        yield
    finally:
        _CREDENTIAL.reset(reset)


def current_credential() -> str:
    """The credential the change being written came through (:data:`LOCAL_CREDENTIAL` by default)."""
    return _CREDENTIAL.get()


@dataclass(frozen=True)
class Event:
    """One row of the event log."""

    id: int
    type: str
    created_at: str
    actor: str
    task_id: str | None
    proposal_id: str | None
    payload: dict[str, Any] = field(default_factory=dict)
    credential_id: str | None = None
    """The token or grant the change came through; ``"local"`` for the operator's own process."""

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape used by every interface."""
        return {
            "id": self.id,
            "type": self.type,
            "created_at": self.created_at,
            "actor": self.actor,
            "credential_id": self.credential_id,
            "task_id": self.task_id,
            "proposal_id": self.proposal_id,
            "payload": self.payload,
        }


def event_from_row(row: sqlite3.Row) -> Event:
    """Build an :class:`Event` from an ``events`` row."""
    return Event(
        id=int(row["id"]),
        type=str(row["type"]),
        created_at=str(row["created_at"]),
        actor=str(row["actor"]),
        task_id=row["task_id"],
        proposal_id=row["proposal_id"],
        payload=json.loads(row["payload"]) if row["payload"] else {},
        credential_id=row["credential_id"],
    )


def append_event(
    conn: sqlite3.Connection,
    type_: str,
    *,
    actor: str,
    task_id: str | None = None,
    proposal_id: str | None = None,
    payload: dict[str, Any] | None = None,
) -> Event:
    """Append one event inside the caller's open write transaction."""
    if not conn.in_transaction:
        raise RuntimeError("append_event must run inside the write transaction of its change")
    created_at = utc_now_iso()
    body = payload or {}
    credential = current_credential()
    # RETURNING rather than lastrowid: the same SQL on SQLite and PostgreSQL.
    event_id = int(
        conn.execute(
            "INSERT INTO events (type, created_at, actor, credential_id, task_id, proposal_id, payload)"
            " VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id",
            (type_, created_at, actor, credential, task_id, proposal_id, json.dumps(body, sort_keys=True)),
        ).fetchone()[0]
    )
    return Event(event_id, type_, created_at, actor, task_id, proposal_id, body, credential)


def get_event(conn: sqlite3.Connection, event_id: int) -> Event | None:
    """One event by ID, or ``None``."""
    row = conn.execute("SELECT * FROM events WHERE id = ?", (event_id,)).fetchone()
    return None if row is None else event_from_row(row)


def list_events(
    conn: sqlite3.Connection,
    *,
    after: int = 0,
    limit: int = 100,
    proposal_id: str | None = None,
    task_id: str | None = None,
    types: tuple[str, ...] = (),
) -> list[Event]:
    """Events with ``id > after`` in ID order, optionally filtered."""
    clauses = ["id > ?"]
    params: list[Any] = [after]
    if proposal_id is not None:
        clauses.append("proposal_id = ?")
        params.append(proposal_id)
    if task_id is not None:
        clauses.append("task_id = ?")
        params.append(task_id)
    if types:
        clauses.append(f"type IN ({','.join('?' * len(types))})")
        params.extend(types)
    params.append(limit)
    rows = conn.execute(
        f"SELECT * FROM events WHERE {' AND '.join(clauses)} ORDER BY id LIMIT ?", params
    ).fetchall()
    return [event_from_row(row) for row in rows]
