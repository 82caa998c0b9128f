"""Shared pieces of the memory administration modules (HTTP API and console).

- :func:`memory_view`: the full HTTP projection of an entry, with title, body, tags and
  provenance redacted on the way out (entries recorded over MCP are stored as given);
- :func:`load_memory`: a row by ID on an open connection, or 404 ``memory_not_found``;
- :func:`record_change`: the event and the audit row of a mutation, on the connection of the
  change, so all three commit together;
- :func:`revision_row`: append one ``memory_revisions`` row.

The error codes of the memory routes are CONTRACTS' (kept from the seed): each is an instance of
one of the classes of :mod:`store.errors`, which decides the HTTP status.
"""

from __future__ import annotations

import json
import re
import sqlite3
from typing import Any

from store.errors import InvalidArgument, NotFound
from store.events import Event, append_audit, append_event
from store.memory._redaction import redact, redact_json

__all__ = [
    "MAX_LABEL_CHARS",
    "entry_dict",
    "load_memory",
    "memory_view",
    "parse_json_column",
    "record_change",
    "require_text",
    "revision_row",
    "revision_view",
    "task_of_scope",
    "valid_memory_id",
]

MAX_LABEL_CHARS = 200
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,199}$")


def valid_memory_id(value: str) -> bool:
    """Whether ``value`` has the shape of a memory ID (anything else cannot exist)."""
    return bool(_ID.match(value))


def load_memory(conn: sqlite3.Connection, memory_id: str, *, code: str = "memory_not_found") -> sqlite3.Row:
    """The ``memory_entries`` row of ``memory_id``, or :class:`NotFound` with ``code``."""
    row = None
    if valid_memory_id(memory_id):
        row = conn.execute("SELECT * FROM memory_entries WHERE id = ?", (memory_id,)).fetchone()
    if row is None:
        raise NotFound(f"memory entry {memory_id!r} does not exist", code=code)
    return row  # type: ignore[no-any-return]


def parse_json_column(text: object, default: Any) -> Any:
    """A JSON column, or ``default`` when it is blank or not valid JSON of the same type."""
    if not isinstance(text, str) or not text.strip():
        return default
    try:
        value = json.loads(text)
    except ValueError:
        return default
    return value if isinstance(value, type(default)) else default


def entry_dict(row: sqlite3.Row) -> dict[str, Any]:
    """Every stored field of an entry, unredacted (for the store's own use)."""
    return {
        "id": row["id"],
        "workspace_id": row["workspace_id"],
        "scope": row["scope"],
        "kind": row["kind"],
        "title": row["title"],
        "body_md": row["body_md"],
        "tags": parse_json_column(row["tags"], []),
        "provenance": parse_json_column(row["provenance"], {}),
        "source_event_id": int(row["source_event_id"] or 0),
        "source_session_id": row["source_session_id"],
        "source_proposal_id": row["source_proposal_id"],
        "confidence": row["confidence"],
        "reliability": row["reliability"],
        "importance": int(row["importance"]),
        "status": row["status"],
        "pinned": bool(row["pinned"]),
        "revision": int(row["revision"]),
        "archived_at": row["archived_at"],
        "resynthesis_status": row["resynthesis_status"],
        "created_at": row["created_at"],
        "updated_at": row["updated_at"],
    }


def memory_view(row: sqlite3.Row) -> dict[str, Any]:
    """The HTTP projection of an entry: every field, secrets redacted."""
    view = entry_dict(row)
    view["title"] = redact(view["title"])
    view["body_md"] = redact(view["body_md"])
    view["tags"] = redact_json(view["tags"])
    view["provenance"] = redact_json(view["provenance"])
    return view


def revision_view(row: sqlite3.Row) -> dict[str, Any]:
    """The HTTP projection of a ``memory_revisions`` row, redacted."""
    return {
        "id": row["id"],
        "memory_id": row["memory_id"],
        "revision": int(row["revision"]),
        "title": redact(row["title"]),
        "body_md": redact(row["body_md"]),
        "reason": None if row["reason"] is None else redact(row["reason"]),
        "actor": row["actor"],
        "provenance": redact_json(parse_json_column(row["provenance"], {})),
        "created_at": row["created_at"],
    }


def revision_row(
    conn: sqlite3.Connection,
    memory_id: str,
    revision: int,
    *,
    title: str,
    body_md: str,
    reason: str | None,
    actor: str,
    now: str,
    provenance: dict[str, Any] | None = None,
) -> None:
    """Append revision ``revision`` of ``memory_id`` to its history."""
    conn.execute(
        "INSERT INTO memory_revisions (id, memory_id, revision, title, body_md, reason, actor, provenance,"
        " created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            f"{memory_id}-r{revision}",
            memory_id,
            revision,
            title,
            body_md,
            reason,
            actor,
            json.dumps(provenance or {}, sort_keys=True),
            now,
        ),
    )


def task_of_scope(scope: str) -> str | None:
    """The task a scope names (task scopes are the task ID itself)."""
    return scope if scope.startswith("T-") else None


def record_change(
    conn: sqlite3.Connection,
    event_type: str,
    *,
    actor: str,
    memory_id: str,
    scope: str | None,
    payload: dict[str, Any],
    action: str | None = None,
) -> Event:
    """The event and the audit row of a memory mutation, in the caller's transaction."""
    event = append_event(
        conn,
        event_type,
        actor=actor,
        task_id=None if scope is None else task_of_scope(scope),
        payload={"memory_id": memory_id, **payload},
    )
    append_audit(
        conn,
        action or event_type,
        actor=actor,
        target_id=memory_id,
        event=event,
        details=payload,
    )
    return event


def require_text(name: str, value: object, *, code: str, limit: int, blank_ok: bool = False) -> str:
    """A text field: a string within ``limit`` characters, without NUL; nonblank unless allowed."""
    if not isinstance(value, str):
        raise InvalidArgument(f"{name} must be a string", code=code)
    if not blank_ok and not value.strip():
        raise InvalidArgument(f"{name} must not be blank", code=code)
    if len(value) > limit:
        raise InvalidArgument(f"{name} is longer than {limit} characters", code=code)
    if "\x00" in value:
        raise InvalidArgument(f"{name} must not contain NUL characters", code=code)
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidArgument(f"{name} is not valid Unicode (an unpaired surrogate)", code=code) from None
    return value
