"""The writes every memory mutation is made of, on the connection of the caller's transaction.

- :func:`insert_entry`: the one ``INSERT INTO memory_entries``: a :class:`NewEntry`, its revision 1
  and a provenance edge per source. ``memory.record`` (a new ID), ``POST /memories`` and a merge
  all create entries through it; they differ only in the entry they hand it and in the reason and
  provenance of its first revision;
- :func:`revision_row`: append one ``memory_revisions`` row (every change of title or body);
- :func:`record_change`: the event and the audit row of a mutation of the HTTP API or the
  console, so the change, its event and its audit row commit together.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from store._ids import new_id
from store.events import Event, append_audit, append_event
from store.memory._checks import checks_json
from store.memory._new_entry import NewEntry
from store.memory._ownership import MemoryWriter
from store.memory._rank_index import index_entries

__all__ = ["core_columns", "insert_entry", "record_change", "revision_row", "task_of_scope"]


def insert_entry(
    conn: sqlite3.Connection,
    entry: NewEntry,
    *,
    actor: str,
    now: str,
    writer: MemoryWriter,
    reason: str = "created",
    history: dict[str, Any] | None = None,
) -> str:
    """Insert ``entry`` at revision 1 with its history row and edges; its ID.

    ``source_event_id`` 0 is stored as NULL (and read back as 0); the lower-cased shadow columns
    the substring scorer counts in are written alongside. ``writer`` (from the credential) is
    recorded as ``written_by``. ``reason`` and ``history`` are the first revision's reason and
    provenance.
    """
    entry_id = entry.id or new_id("memory")
    values = {
        "id": entry_id,
        **core_columns(entry),
        "created_at": now,
        "updated_at": now,
        "tags": json.dumps(list(entry.tags)),
        "provenance": json.dumps(entry.provenance, sort_keys=True),
        "source_session_id": entry.source_session_id,
        "source_proposal_id": entry.source_proposal_id,
        "confidence": entry.confidence,
        "reliability": entry.reliability,
        "pinned": 0,
        "revision": 1,
        "written_by": writer.key,
    }
    placeholders = ", ".join(f":{name}" for name in values)
    conn.execute(f"INSERT INTO memory_entries ({', '.join(values)}) VALUES ({placeholders})", values)
    index_entries(conn, [entry_id])
    revision_row(
        conn,
        entry_id,
        1,
        title=entry.title,
        body_md=entry.body_md,
        reason=reason,
        actor=actor,
        now=now,
        provenance=history,
    )
    conn.executemany(
        "INSERT INTO memory_provenance_edges (memory_id, source_type, source_id, relation, created_at)"
        " VALUES (?, ?, ?, ?, ?)",
        [(entry_id, kind, source, relation, now) for kind, source, relation in entry.sources],
    )
    return entry_id


def core_columns(entry: NewEntry) -> dict[str, Any]:
    """The core columns of ``entry`` as stored, by name: ``source_event_id`` 0 as NULL, and the
    lower-cased shadow copies (Python's Unicode ``lower()``) the substring scorer counts in; and
    ``checks`` when given (a replacement that omits them keeps the stored ones)."""
    return {
        "scope": entry.scope,
        "kind": entry.kind,
        "title": entry.title,
        "body_md": entry.body_md,
        "source_event_id": entry.source_event_id or None,
        "importance": entry.importance,
        "status": entry.status,
        "lc_title": entry.title.lower(),
        "lc_body": entry.body_md.lower(),
        "lc_scope": entry.scope.lower(),
        "lc_kind": entry.kind.lower(),
    } | ({} if entry.checks is None else {"checks": checks_json(entry.checks)})


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
