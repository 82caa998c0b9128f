"""The memory store: durable decisions, constraints and facts, with their revision history.

The four MCP memory tools are thin wrappers over :class:`MemoryStore`. The semantics are the
contract in CONTRACTS.md ("Memory tools"), kept from the seed system:

- ``record`` is a full-replacement upsert of the core fields that keeps ``created_at``;
  ``source_event_id`` 0 is stored as NULL and read back as 0; ``importance`` 0 becomes 50;
- ``query`` scores by the number of non-overlapping occurrences of the whole lower-cased,
  untrimmed query in title, body, scope and kind, computed in SQL over lower-cased shadow
  columns (Python's Unicode ``lower()`` at write time, SQLite's ``replace()``/``length()`` at
  read time); an empty query scores by importance;
- ``summarize`` compares every supplied filter with the entry's scope and drops ``stale``;
- ``mark_stale`` appends the reason to the body.

Improvements over the seed: every change of title or body appends a ``memory_revisions`` row and
increments ``revision``, and every mutation writes its event in the same transaction.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from store._ids import new_id, utc_now_iso
from store.access import require_live_grant
from store.db import Database
from store.errors import Forbidden, InvalidArgument, NotFound
from store.events import append_event
from store.memory._entry import (
    MAX_BODY_CHARS,
    MAX_QUERY_CHARS,
    MAX_TITLE_CHARS,
    MemoryEntry,
    MemoryRecord,
    SummaryResult,
    check_memory_id,
    entry_from_row,
    optional_filter,
    optional_int,
    require_text,
)
from store.memory._search import MemoryFilter, ranked_query, render_summary, substring_query, summary_query
from store.memory._views import revision_row, task_of_scope

__all__ = [
    "MAX_BODY_CHARS",
    "MAX_TITLE_CHARS",
    "MemoryEntry",
    "MemoryRecord",
    "MemoryStore",
    "SummaryResult",
    "check_memory_id",
    "entry_from_row",
    "render_summary",
]


class MemoryStore:
    """Reads and writes memory entries; every method is blocking (call it through ``Database.run``)."""

    def __init__(self, db: Database):
        self.db = db

    # -- reads ---------------------------------------------------------------------------------

    def get(self, memory_id: str) -> MemoryEntry:
        """One entry by ID, or :class:`NotFound`."""
        row = self.db.read(
            lambda conn: conn.execute("SELECT * FROM memory_entries WHERE id = ?", (memory_id,)).fetchone()
        )
        if row is None:
            raise NotFound(f"memory entry {memory_id} does not exist")
        return entry_from_row(row)

    def get_many(self, conn: sqlite3.Connection, ids: list[str]) -> dict[str, MemoryEntry]:
        """Entries by ID on an open connection (missing IDs are absent from the answer)."""
        if not ids:
            return {}
        rows = conn.execute(
            f"SELECT * FROM memory_entries WHERE id IN ({','.join('?' * len(ids))})", ids
        ).fetchall()
        return {row["id"]: entry_from_row(row) for row in rows}

    def query(
        self,
        query: object = None,
        *,
        scope: object = None,
        kind: object = None,
        limit: object = None,
        exclude_stale: object = False,
        match: object = "substring",
        allowed_scopes: frozenset[str] | None = None,
    ) -> list[MemoryEntry]:
        """``memory.query``: see the module docstring. ``allowed_scopes`` narrows to a grant's scopes."""
        text = query if isinstance(query, str) else ""
        if len(text) > MAX_QUERY_CHARS:
            raise InvalidArgument(f"query is longer than {MAX_QUERY_CHARS} characters")
        scope_f = optional_filter("scope", scope)
        kind_f = optional_filter("kind", kind)
        count = optional_int("limit", limit, 10)
        if not isinstance(exclude_stale, bool):
            raise InvalidArgument("exclude_stale must be a boolean")
        if match not in ("substring", "ranked"):
            raise InvalidArgument('match must be "substring" or "ranked"')

        filters = MemoryFilter(scope_f, kind_f, allowed_scopes, exclude_stale, count)
        sql, params = (
            ranked_query(text, filters) if match == "ranked" else substring_query(text.lower(), filters)
        )
        rows = self.db.read(lambda conn: conn.execute(sql, params).fetchall())
        return [entry_from_row(row) for row in rows]

    def summarize(
        self,
        *,
        scope: object = None,
        task_id: object = None,
        proposal_id: object = None,
        allowed_scopes: frozenset[str] | None = None,
    ) -> SummaryResult:
        """``memory.summarize``: every supplied filter must equal the entry's scope."""
        filters = {
            "scope": optional_filter("scope", scope),
            "task_id": optional_filter("task_id", task_id),
            "proposal_id": optional_filter("proposal_id", proposal_id),
        }
        sql, params = summary_query(filters, allowed_scopes)
        rows = self.db.read(lambda conn: conn.execute(sql, params).fetchall())
        entries = [entry_from_row(row) for row in rows]
        label = filters["proposal_id"] or filters["task_id"] or filters["scope"] or "project"
        return SummaryResult(entries, render_summary(label, entries))

    # -- writes --------------------------------------------------------------------------------

    def record(
        self,
        *,
        scope: object,
        kind: object,
        title: object,
        body_md: object,
        source_event_id: object = None,
        importance: object = None,
        memory_id: object = None,
        status: object = None,
        actor: str,
        source_proposal_id: str | None = None,
        allowed_scopes: frozenset[str] | None = None,
        grant_id: str | None = None,
    ) -> MemoryEntry:
        """``memory.record``: insert, or fully replace the core fields of an existing ID.

        With ``allowed_scopes`` (a capability's scopes) both the new scope and, on replacement,
        the stored entry's scope must be allowed. With ``grant_id`` the grant must still be live
        inside the write transaction, so a revocation that lands after authentication stops it.
        """
        record = MemoryRecord.validate(
            scope=scope,
            kind=kind,
            title=title,
            body_md=body_md,
            source_event_id=source_event_id,
            importance=importance,
            memory_id=memory_id,
            status=status,
        )
        if allowed_scopes is not None and record.scope not in allowed_scopes:
            raise Forbidden(f"scope {record.scope!r} is outside this capability's scopes")
        return self.db.write(
            lambda conn: _write_record(
                conn,
                record,
                actor=actor,
                source_proposal_id=source_proposal_id,
                allowed_scopes=allowed_scopes,
                grant_id=grant_id,
            )
        )

    def record_many(self, records: list[dict[str, Any]], *, actor: str) -> list[MemoryEntry]:
        """Record many entries in one transaction (bulk import): all are validated first, then
        written together, so either every entry and its event is stored or none is."""
        validated = [MemoryRecord.validate(**fields) for fields in records]
        return self.db.write(lambda conn: [_write_record(conn, record, actor=actor) for record in validated])

    def mark_stale(self, *, memory_id: object, reason_md: object, actor: str) -> MemoryEntry:
        """``memory.mark_stale``: status ``stale`` and the reason appended to the body."""
        id_v = check_memory_id(memory_id)
        reason_v = require_text("reason_md", reason_md, limit=MAX_TITLE_CHARS * 10)

        def write(conn: sqlite3.Connection) -> MemoryEntry:
            row = conn.execute("SELECT * FROM memory_entries WHERE id = ?", (id_v,)).fetchone()
            if row is None:
                raise NotFound(f"memory entry {id_v} does not exist")
            body = row["body_md"]
            new_body = (
                f"Marked stale: {reason_v}" if not body.strip() else f"{body}\n\nStale reason: {reason_v}"
            )
            if len(new_body) > MAX_BODY_CHARS * 2:
                raise InvalidArgument("the entry body would grow past its limit; record a new entry instead")
            now = utc_now_iso()
            revision = int(row["revision"]) + 1
            conn.execute(
                "UPDATE memory_entries SET status = 'stale', body_md = ?, lc_body = ?, updated_at = ?,"
                " revision = ? WHERE id = ?",
                (new_body, new_body.lower(), now, revision, id_v),
            )
            revision_row(
                conn,
                id_v,
                revision,
                title=row["title"],
                body_md=new_body,
                reason=reason_v,
                actor=actor,
                now=now,
            )
            append_event(
                conn,
                "memory.marked_stale",
                actor=actor,
                task_id=task_of_scope(row["scope"]),
                payload={"memory_id": id_v, "reason_md": reason_v, "revision": revision},
            )
            return entry_from_row(
                conn.execute("SELECT * FROM memory_entries WHERE id = ?", (id_v,)).fetchone()
            )

        return self.db.write(write)


def _write_record(
    conn: sqlite3.Connection,
    record: MemoryRecord,
    *,
    actor: str,
    source_proposal_id: str | None = None,
    allowed_scopes: frozenset[str] | None = None,
    grant_id: str | None = None,
) -> MemoryEntry:
    """Insert or fully replace one entry, its revision and its event, inside a write transaction."""
    if grant_id is not None:
        require_live_grant(conn, grant_id)
    scope_v, kind_v, title_v, body_v = record.scope, record.kind, record.title, record.body_md
    source_v, importance_v, id_v, status_v = (
        record.source_event_id,
        record.importance,
        record.memory_id,
        record.status,
    )
    now = utc_now_iso()
    existing = None
    if id_v is not None:
        existing = conn.execute("SELECT * FROM memory_entries WHERE id = ?", (id_v,)).fetchone()
    if existing is not None and allowed_scopes is not None:
        # A capability replaces only what its own proposal recorded, checked inside the write so
        # that no entry created meanwhile under the same ID can slip past.
        if existing["scope"] not in allowed_scopes:
            raise Forbidden(f"memory entry {id_v} lies outside this capability's scopes")
        if existing["source_proposal_id"] != source_proposal_id:
            raise Forbidden(f"memory entry {id_v} was not recorded for this capability's proposal")
    lowered = (title_v.lower(), body_v.lower(), scope_v.lower(), kind_v.lower())
    if existing is None:
        entry_id = id_v or new_id("memory")
        conn.execute(
            "INSERT INTO memory_entries (id, scope, kind, title, body_md, source_event_id,"
            " importance, status, created_at, updated_at, source_proposal_id, revision,"
            " lc_title, lc_body, lc_scope, lc_kind)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?, ?, ?)",
            (
                entry_id,
                scope_v,
                kind_v,
                title_v,
                body_v,
                source_v or None,
                importance_v,
                status_v,
                now,
                now,
                source_proposal_id,
                *lowered,
            ),
        )
        revision_row(conn, entry_id, 1, title=title_v, body_md=body_v, reason="created", actor=actor, now=now)
        created = True
    else:
        entry_id = existing["id"]
        changed = existing["title"] != title_v or existing["body_md"] != body_v
        revision = int(existing["revision"]) + (1 if changed else 0)
        conn.execute(
            "UPDATE memory_entries SET scope = ?, kind = ?, title = ?, body_md = ?,"
            " source_event_id = ?, importance = ?, status = ?, updated_at = ?, revision = ?,"
            " source_proposal_id = COALESCE(?, source_proposal_id),"
            " lc_title = ?, lc_body = ?, lc_scope = ?, lc_kind = ? WHERE id = ?",
            (
                scope_v,
                kind_v,
                title_v,
                body_v,
                source_v or None,
                importance_v,
                status_v,
                now,
                revision,
                source_proposal_id,
                *lowered,
                entry_id,
            ),
        )
        if changed:
            revision_row(
                conn,
                entry_id,
                revision,
                title=title_v,
                body_md=body_v,
                reason="recorded",
                actor=actor,
                now=now,
            )
        created = False
    row = conn.execute("SELECT * FROM memory_entries WHERE id = ?", (entry_id,)).fetchone()
    entry = entry_from_row(row)
    append_event(
        conn,
        "memory.recorded",
        actor=actor,
        task_id=task_of_scope(scope_v),
        proposal_id=source_proposal_id,
        payload={
            "memory_id": entry_id,
            "scope": scope_v,
            "kind": kind_v,
            "title": title_v,
            "status": status_v,
            "revision": entry.revision,
            "created": created,
        },
    )
    return entry
