"""The memory store: durable decisions, constraints and facts, with their revision history.

The four MCP memory tools are thin wrappers over :class:`MemoryStore`. The semantics are the
contract in CONTRACTS.md ("Memory tools"), kept from the seed system:

- ``record`` is a full-replacement upsert of the core fields that keeps ``created_at``;
  ``source_event_id`` 0 is stored as NULL and read back as 0; ``importance`` 0 becomes 50;
- ``query`` scores by the number of non-overlapping occurrences of the whole lower-cased,
  untrimmed query in title, body, scope and kind, computed in SQL over lower-cased shadow
  columns (Python's Unicode ``lower()`` at write time, SQLite's ``replace()``/``length()`` at
  read time), on the candidates of a trigram index when that prunes (:mod:`store.memory._query`);
  an empty query scores by importance;
- ``summarize`` compares every supplied filter with the entry's scope and drops ``stale``;
- ``mark_stale`` appends the reason to the body.

Improvements over the seed: every change of title or body appends a ``memory_revisions`` row and
increments ``revision``, and every mutation writes its event in the same transaction.

A new entry is validated as a :class:`~store.memory._new_entry.NewEntry` under the ``memory.record``
contract and written by :func:`~store.memory._write.insert_entry`, the one write path it shares
with ``POST /memories`` and merges.
"""

from __future__ import annotations

import dataclasses
import sqlite3
from typing import Any

from store._ids import utc_now_iso
from store._rows import fetch_row
from store._text import check_label, check_text
from store.access import require_live_grant
from store.db import Database
from store.errors import Forbidden, InvalidArgument
from store.events import append_event
from store.memory._entry import (
    MemoryEntry,
    SummaryResult,
    core_from_values,
    entry_from_row,
    entry_from_values,
)
from store.memory._new_entry import MAX_BODY_CHARS, MAX_TITLE_CHARS, RECORD, NewEntry
from store.memory._ownership import MemoryWriter, writer_owns
from store.memory._query import MAX_QUERY_CHARS, find, optional_filter, query_arguments
from store.memory._rank_blocks import convert
from store.memory._rank_index import RANK_PENDING, batched_index, drain_backlog, index_entries
from store.memory._search import render_summary, summary_query
from store.memory._write import core_columns, insert_entry, revision_row, task_of_scope

__all__ = ["MAX_QUERY_CHARS", "MemoryStore", "optional_filter"]


class MemoryStore:
    """Reads and writes memory entries; every method is blocking (call it through ``Database.run``)."""

    def __init__(self, db: Database):
        self.db = db
        # Entries older than the ranked index (migration 0012) are indexed once, when a project
        # opens, and lists older than its blocks (0014) packed; until then a ranked query
        # evaluates every entry directly (same answer, slower).
        while db.read(_backlog_waits):
            db.write(_catch_up)

    # -- reads ---------------------------------------------------------------------------------

    def get(self, memory_id: str) -> MemoryEntry:
        """One entry by ID, or :class:`NotFound`."""
        return self.db.read(lambda conn: _entry(conn, memory_id))

    def get_many(self, conn: sqlite3.Connection, ids: list[str]) -> dict[str, MemoryEntry]:
        """Entries by ID on an open connection (missing IDs are absent from the answer)."""
        if not ids:
            return {}
        rows = conn.execute(
            f"SELECT * FROM memory_entries WHERE id IN ({','.join('?' * len(ids))})", ids
        ).fetchall()
        return {row["id"]: entry_from_row(row) for row in rows}

    def query(self, query: object = None, **arguments: Any) -> list[MemoryEntry]:
        """``memory.query``: see the module docstring. The arguments are those of
        :func:`~store.memory._query.query_arguments` (``scope``, ``kind``, ``limit``,
        ``exclude_stale``, ``match``); ``allowed_scopes`` narrows to a grant's scopes."""
        text, filters, ranked = query_arguments(query, **arguments)
        return self.db.read(lambda conn: find(conn, text, filters, entry_from_values, ranked=ranked))

    def query_core(self, query: object = None, **arguments: Any) -> list[dict[str, Any]]:
        """:meth:`query`'s answer (the same arguments) as each entry's :meth:`MemoryEntry.core`,
        built from the rows without the whole records: what the memory tools answer."""
        text, filters, ranked = query_arguments(query, **arguments)
        return self.db.read(lambda conn: find(conn, text, filters, core_from_values, ranked=ranked))

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
        checks: object = None,
        actor: str,
        writer: MemoryWriter | None = None,
        source_proposal_id: str | None = None,
        allowed_scopes: frozenset[str] | None = None,
        grant_id: str | None = None,
    ) -> MemoryEntry:
        """``memory.record``: insert, or fully replace the core fields of an existing ID.

        ``writer`` is who the credential says writes (default: ``grant_id``'s grant when given,
        else the operator ``actor``); one that
        is not a curator replaces only entries it wrote and never sets lifecycle state
        (:mod:`store.memory._ownership`). With ``allowed_scopes`` (a capability's scopes) both the
        new scope and, on replacement, the stored entry's scope must be allowed. With ``grant_id``
        the grant must still be live inside the write transaction, so a revocation that lands
        after authentication stops it.
        """
        fields = {
            "scope": scope,
            "kind": kind,
            "title": title,
            "body_md": body_md,
            "source_event_id": source_event_id,
            "importance": importance,
            "memory_id": memory_id,
            "status": status,
            "checks": checks,
        }
        entry = dataclasses.replace(NewEntry.validate(fields, RECORD), source_proposal_id=source_proposal_id)
        if allowed_scopes is not None and entry.scope not in allowed_scopes:
            raise Forbidden(f"scope {entry.scope!r} is outside this capability's scopes")
        # The default writer: the grant when the call is bound to one, else the operator ``actor``.
        by = writer or (MemoryWriter.operator(actor) if grant_id is None else MemoryWriter.grant(grant_id))
        sets_status = status not in (None, "")
        return self.db.write(
            lambda conn: _write_record(
                conn,
                entry,
                actor=actor,
                writer=by,
                sets_status=sets_status,
                allowed_scopes=allowed_scopes,
                grant_id=grant_id,
            )
        )

    def may_replace(self, memory_id: str, writer: MemoryWriter) -> bool:
        """Whether ``writer`` may replace entry ``memory_id`` (``True`` when there is no such entry)."""

        def read(conn: sqlite3.Connection) -> bool:
            row = conn.execute("SELECT written_by FROM memory_entries WHERE id = ?", (memory_id,)).fetchone()
            return row is None or writer_owns(conn, row["written_by"], writer)

        return self.db.read(read)

    def record_many(self, records: list[dict[str, Any]], *, actor: str) -> list[MemoryEntry]:
        """Record many entries in one transaction (bulk import): all are validated first, then
        written together, so either every entry and its event is stored or none is."""
        validated = [NewEntry.validate(fields, RECORD) for fields in records]
        writer = MemoryWriter.operator(actor)

        def write(conn: sqlite3.Connection) -> list[MemoryEntry]:
            with batched_index(conn):  # the ranked index once for the batch, not once an entry
                return [
                    _write_record(conn, entry, actor=actor, writer=writer, sets_status=True)
                    for entry in validated
                ]

        return self.db.write(write)

    def mark_stale(self, *, memory_id: object, reason_md: object, actor: str) -> MemoryEntry:
        """``memory.mark_stale``: status ``stale`` and the reason appended to the body."""
        id_v = check_label("memory_id", memory_id)
        reason_v = check_text("reason_md", reason_md, limit=MAX_TITLE_CHARS * 10)

        def write(conn: sqlite3.Connection) -> MemoryEntry:
            entry = _entry(conn, id_v)
            body = entry.body_md
            new_body = (
                f"Marked stale: {reason_v}" if not body.strip() else f"{body}\n\nStale reason: {reason_v}"
            )
            if len(new_body) > MAX_BODY_CHARS * 2:
                raise InvalidArgument("the entry body would grow past its limit; record a new entry instead")
            now = utc_now_iso()
            revision = entry.revision + 1
            conn.execute(
                "UPDATE memory_entries SET status = 'stale', body_md = ?, lc_body = ?, updated_at = ?,"
                " revision = ? WHERE id = ?",
                (new_body, new_body.lower(), now, revision, id_v),
            )
            index_entries(conn, [id_v])
            revision_row(
                conn,
                id_v,
                revision,
                title=entry.title,
                body_md=new_body,
                reason=reason_v,
                actor=actor,
                now=now,
            )
            append_event(
                conn,
                "memory.marked_stale",
                actor=actor,
                task_id=task_of_scope(entry.scope),
                payload={"memory_id": id_v, "reason_md": reason_v, "revision": revision},
            )
            return _entry(conn, id_v)

        return self.db.write(write)


def _backlog_waits(conn: sqlite3.Connection) -> bool:
    return conn.execute(RANK_PENDING).fetchone() is not None


def _catch_up(conn: sqlite3.Connection) -> int:
    """Pack a batch of lists older than the blocks, else index a batch of the backlog."""
    return convert(conn) or drain_backlog(conn)


def _entry(conn: sqlite3.Connection, memory_id: str) -> MemoryEntry:
    """The entry ``memory_id`` on an open connection, or :class:`NotFound` (the tools' code)."""
    return entry_from_row(fetch_row(conn, "memory_entries", "memory entry", memory_id))


def _write_record(
    conn: sqlite3.Connection,
    entry: NewEntry,
    *,
    actor: str,
    writer: MemoryWriter,
    sets_status: bool,
    allowed_scopes: frozenset[str] | None = None,
    grant_id: str | None = None,
) -> MemoryEntry:
    """Insert (:func:`insert_entry`) or fully replace one entry, with its revision and its event.

    ``sets_status``: whether the caller named a status (rather than taking the default).
    """
    if grant_id is not None:
        require_live_grant(conn, grant_id)
    now = utc_now_iso()
    existing = None
    if entry.id is not None:
        existing = conn.execute("SELECT * FROM memory_entries WHERE id = ?", (entry.id,)).fetchone()
    if not writer.curator:
        entry = _keep_lifecycle(conn, existing, entry, writer=writer, sets_status=sets_status)
    if existing is None:
        entry_id = insert_entry(conn, entry, actor=actor, now=now, writer=writer)
    else:
        entry_id = existing["id"]
        _replace(conn, existing, entry, actor=actor, now=now, allowed_scopes=allowed_scopes)
    stored = _entry(conn, entry_id)
    append_event(
        conn,
        "memory.recorded",
        actor=actor,
        task_id=task_of_scope(entry.scope),
        proposal_id=entry.source_proposal_id,
        payload={
            "memory_id": entry_id,
            "scope": entry.scope,
            "kind": entry.kind,
            "title": entry.title,
            "status": entry.status,
            "revision": stored.revision,
            "created": existing is None,
        },
    )
    return stored


def _keep_lifecycle(
    conn: sqlite3.Connection,
    existing: sqlite3.Row | None,
    entry: NewEntry,
    *,
    writer: MemoryWriter,
    sets_status: bool,
) -> NewEntry:
    """A non-curator's entry: only over entries it wrote, and never with a lifecycle state of its own.

    Checked inside the write transaction, so no entry created meanwhile under the same ID can slip
    past; a replacement keeps the stored status (an operator's stale mark, archive or merge stands).
    """
    if existing is None:
        if sets_status and entry.status != "active":
            raise Forbidden("only operators set a memory entry's lifecycle state; omit status")
        return entry
    if not writer_owns(conn, existing["written_by"], writer):
        raise Forbidden(
            f"memory entry {existing['id']} was written by someone else; "
            "only its writer or an operator may replace it"
        )
    if sets_status and entry.status != existing["status"]:
        raise Forbidden("only operators change a memory entry's lifecycle state; omit status")
    return dataclasses.replace(entry, status=str(existing["status"]))


def _replace(
    conn: sqlite3.Connection,
    existing: sqlite3.Row,
    entry: NewEntry,
    *,
    actor: str,
    now: str,
    allowed_scopes: frozenset[str] | None,
) -> None:
    """Fully replace the core fields of ``existing``; a new revision when title or body change."""
    entry_id = existing["id"]
    if allowed_scopes is not None and existing["scope"] not in allowed_scopes:
        raise Forbidden(f"memory entry {entry_id} lies outside this capability's scopes")
    changed = existing["title"] != entry.title or existing["body_md"] != entry.body_md
    revision = int(existing["revision"]) + (1 if changed else 0)
    core = core_columns(entry)
    conn.execute(
        f"UPDATE memory_entries SET {', '.join(f'{name} = :{name}' for name in core)}, updated_at = :now,"
        " revision = :revision, source_proposal_id = COALESCE(:source_proposal_id, source_proposal_id)"
        " WHERE id = :id",
        {
            **core,
            "now": now,
            "revision": revision,
            "source_proposal_id": entry.source_proposal_id,
            "id": entry_id,
        },
    )
    index_entries(conn, [entry_id])
    if changed:
        revision_row(
            conn,
            entry_id,
            revision,
            title=entry.title,
            body_md=entry.body_md,
            reason="recorded",
            actor=actor,
            now=now,
        )
