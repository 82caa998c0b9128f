"""The audit log of HTTP and console mutations.

:func:`append_audit` runs inside the write transaction of the change, right after its event, so
the change, its event and its audit row commit or roll back together (the seed wrote audit rows
after the commit and ignored their errors, so a 2xx proved nothing about them).
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from typing import Any

from store._ids import utc_now_iso
from store.events._log import Event, current_credential

__all__ = ["AuditRow", "append_audit", "list_audit"]


@dataclass(frozen=True)
class AuditRow:
    """One audit row."""

    id: int
    created_at: str
    actor: str
    action: str
    target_type: str
    target_id: str
    event_id: int | None
    details: dict[str, Any] = field(default_factory=dict)
    credential_id: str | None = None
    """The token or grant the change came through; ``"local"`` for the operator's own process."""

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape."""
        return {
            "id": self.id,
            "created_at": self.created_at,
            "actor": self.actor,
            "credential_id": self.credential_id,
            "action": self.action,
            "target_type": self.target_type,
            "target_id": self.target_id,
            "event_id": self.event_id,
            "details": self.details,
        }


def append_audit(
    conn: sqlite3.Connection,
    action: str,
    *,
    actor: str,
    target_id: str,
    event: Event | None,
    target_type: str = "memory",
    details: dict[str, Any] | None = None,
) -> int:
    """Append one audit row inside the caller's open write transaction; returns its ID."""
    if not conn.in_transaction:
        raise RuntimeError("append_audit must run inside the write transaction of its change")
    # RETURNING rather than lastrowid: the same SQL on SQLite and PostgreSQL.
    row = conn.execute(
        "INSERT INTO audit_log"
        " (created_at, actor, credential_id, action, target_type, target_id, event_id, details)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
        (
            utc_now_iso(),
            actor,
            current_credential(),
            action,
            target_type,
            target_id,
            None if event is None else event.id,
            json.dumps(details or {}, sort_keys=True),
        ),
    ).fetchone()
    return int(row[0])


def list_audit(conn: sqlite3.Connection, *, target_id: str | None = None, limit: int = 100) -> list[AuditRow]:
    """Audit rows, newest first, optionally for one target."""
    sql = "SELECT * FROM audit_log"
    params: list[Any] = []
    if target_id is not None:
        sql += " WHERE target_id = ?"
        params.append(target_id)
    params.append(limit)
    rows = conn.execute(sql + " ORDER BY id DESC LIMIT ?", params).fetchall()
    return [
        AuditRow(
            id=int(r["id"]),
            created_at=r["created_at"],
            actor=r["actor"],
            action=r["action"],
            target_type=r["target_type"],
            target_id=r["target_id"],
            event_id=r["event_id"],
            details=json.loads(r["details"] or "{}"),
            credential_id=r["credential_id"],
        )
        for r in rows
    ]
