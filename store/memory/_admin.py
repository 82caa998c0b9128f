"""Memory administration for the HTTP API and the console: the facade, list and detail.

:class:`MemoryAdmin` gathers every operation of the memory routes (CONTRACTS, "HTTP API"); a new
entry is validated in :mod:`store.memory._new_entry` and written by :mod:`store.memory._write` (the
write path ``memory.record`` and merges share), history lives in :mod:`store.memory._history`,
aliases, sources and merges in :mod:`store.memory._links`, state actions and resynthesis in
:mod:`store.memory._actions`.
Each mutation is validated first, then runs as one write transaction that makes the change,
appends its event and its audit row, and (with an ``Idempotency-Key``) stores its answer, all or
nothing.

Fixed here against the seed: list matches ``q`` as a literal, case-insensitive substring of the
title or body: it uses ``instr`` on the lower-cased shadow columns, never ``LIKE``, so ``%`` and
``_`` are plain characters. The cursor is opaque (base64 of the last ``(created_at, id)``).
"""

from __future__ import annotations

import base64
import binascii
import builtins
import json
import sqlite3
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

from store._ids import utc_now_iso
from store._text import check_text, is_label, parse_json
from store.db import Database
from store.errors import InvalidArgument, InvalidMemoryAction, MemoryAliasCycle
from store.events import Committed, IdempotencyClaim, commit
from store.memory._actions import ACTIONS, Synthesizer, act_in, fulfil_resynthesis, request_resynthesis_in
from store.memory._history import diff_revisions, list_revisions, prepare_revision
from store.memory._links import alias_graph, merge_in, merge_legacy_in, resolve_aliases, source_chain
from store.memory._new_entry import HTTP_CREATE, NewEntry
from store.memory._ownership import MemoryWriter
from store.memory._views import load_memory, memory_view
from store.memory._write import insert_entry, record_change

__all__ = ["MAX_PAGE", "MemoryAdmin", "create_in", "decode_cursor", "encode_cursor"]

MAX_PAGE = 200
DEFAULT_PAGE = 50
MAX_QUERY_CHARS = 1_000


def encode_cursor(created_at: str, memory_id: str) -> str:
    """An opaque cursor for the position after ``(created_at, memory_id)``."""
    raw = json.dumps([created_at, memory_id], separators=(",", ":")).encode("utf-8")
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def decode_cursor(cursor: str) -> tuple[str, str]:
    """The position a cursor stands for, or ``invalid_argument``."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        created_at, memory_id = parse_json("cursor", raw, max_depth=1)  # never a RecursionError
    except (binascii.Error, ValueError, TypeError, InvalidArgument):
        raise InvalidArgument("cursor is not one this API returned") from None
    if not isinstance(created_at, str) or not isinstance(memory_id, str):
        raise InvalidArgument("cursor is not one this API returned")
    return created_at, memory_id


def create_in(conn: sqlite3.Connection, new: NewEntry, *, actor: str, writer: MemoryWriter) -> dict[str, Any]:
    """``POST /memories`` in its transaction: the entry (revision 1, edges), event, audit; ``{"memory"}``."""
    memory_id = insert_entry(
        conn,
        new,
        actor=actor,
        now=utc_now_iso(),
        writer=writer,
        history={"via": "http", "sources": len(new.sources)},
    )
    record_change(
        conn,
        "memory.recorded",
        actor=actor,
        memory_id=memory_id,
        scope=new.scope,
        payload={"scope": new.scope, "kind": new.kind, "title": new.title, "revision": 1, "created": True},
        action="memory.created",
    )
    return {"memory": memory_view(load_memory(conn, memory_id))}


def _trimmed(value: str | None) -> str | None:
    if value is None:
        return None
    text = value.strip()
    if len(text) > MAX_QUERY_CHARS:
        raise InvalidArgument(f"filters are limited to {MAX_QUERY_CHARS} characters")
    return text or None


class MemoryAdmin:
    """Every memory operation of the HTTP API; blocking (call it through ``Database.run``)."""

    def __init__(self, db: Database):
        self.db = db

    def _commit(
        self,
        mutation: Callable[[sqlite3.Connection], dict[str, Any]],
        claim: IdempotencyClaim | None,
        status: int,
    ) -> Committed:
        return commit(self.db, mutation, claim, status=status)

    # -- create, list, detail ------------------------------------------------------------------

    def create(
        self,
        fields: Mapping[str, Any],
        *,
        actor: str,
        claim: IdempotencyClaim | None = None,
        writer: MemoryWriter | None = None,
    ) -> Committed:
        """``POST /memories``: 201 ``{"memory"}``; ``fields`` as the route parsed them.

        Validated under the HTTP contract (``invalid_memory``, redaction, confidence and reliability
        in 0..1) by the validator ``memory.record`` uses too. ``writer`` is who the credential says
        wrote it (default: the operator ``actor``).
        """
        new = NewEntry.validate(fields, HTTP_CREATE)
        by = writer or MemoryWriter.operator(actor)
        return self._commit(partial(create_in, new=new, actor=actor, writer=by), claim, 201)

    def list(
        self,
        *,
        q: str | None = None,
        scope: str | None = None,
        kind: str | None = None,
        status: str | None = None,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> dict[str, Any]:
        """``GET /memories``: ``{"items", "next_cursor"}``, oldest first, archived excluded.

        ``status=archived`` is the one way to list archived entries (in the seed it combined with
        the archived exclusion into a filter nothing could pass).
        """
        count = DEFAULT_PAGE if limit is None else limit
        if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_PAGE:
            raise InvalidArgument(f"limit must be an integer from 1 to {MAX_PAGE}")
        where: list[str] = []
        params: list[Any] = []
        status_v = _trimmed(status)
        if status_v is None:
            where.append("status != 'archived'")
        else:
            where.append("status = ?")
            params.append(status_v)
        for column, value in (("scope", _trimmed(scope)), ("kind", _trimmed(kind))):
            if value is not None:
                where.append(f"{column} = ?")
                params.append(value)
        needle = _trimmed(q)
        if needle is not None:
            where.append("(instr(lc_title, ?) > 0 OR instr(lc_body, ?) > 0)")
            params += [needle.lower(), needle.lower()]
        if cursor:
            after_at, after_id = decode_cursor(cursor)
            where.append("(created_at, id) > (?, ?)")
            params += [after_at, after_id]
        sql = f"SELECT * FROM memory_entries WHERE {' AND '.join(where)} ORDER BY created_at, id LIMIT ?"
        rows = self.db.read(lambda conn: conn.execute(sql, [*params, count + 1]).fetchall())
        page = rows[:count]
        next_cursor = encode_cursor(page[-1]["created_at"], page[-1]["id"]) if len(rows) > count else None
        return {"items": [memory_view(row) for row in page], "next_cursor": next_cursor}

    def get(self, memory_id: str, *, follow_aliases: bool = False) -> dict[str, Any]:
        """``GET /memories/{id}``: archived entries are readable; aliases resolved when asked."""

        def read(conn: sqlite3.Connection) -> dict[str, Any]:
            if not follow_aliases:
                return {"memory": memory_view(load_memory(conn, memory_id))}
            load_memory(conn, memory_id)
            chain, cycle = resolve_aliases(conn, memory_id)
            if cycle:
                raise MemoryAliasCycle(f"the aliases of {memory_id} form a cycle: {' -> '.join(chain)}")
            canonical = load_memory(conn, chain[-1])
            return {
                "memory": memory_view(canonical),
                "requested_id": memory_id,
                "resolved": len(chain) > 1,
                "alias_chain": chain,
            }

        return self.db.read(read)

    # -- history, links, actions ---------------------------------------------------------------

    def revise(
        self, memory_id: str, fields: Mapping[str, Any], *, actor: str, claim: IdempotencyClaim | None = None
    ) -> Committed:
        """``POST /memories/{id}/revisions`` (see :mod:`store.memory._history`)."""
        return self._commit(prepare_revision(memory_id, fields, actor=actor), claim, 200)

    def revisions(self, memory_id: str) -> dict[str, Any]:
        """``GET /memories/{id}/revisions``."""
        return self.db.read(lambda conn: list_revisions(conn, memory_id))

    def diff(self, memory_id: str, from_label: str = "1", to_label: str = "latest") -> dict[str, Any]:
        """``GET /memories/{id}/diff``."""
        return self.db.read(lambda conn: diff_revisions(conn, memory_id, from_label, to_label))

    def graph(self, memory_id: str) -> dict[str, Any]:
        """``GET /memories/{id}/graph``."""
        return self.db.read(lambda conn: alias_graph(conn, memory_id))

    def source_chain(self, memory_id: str, *, depth: int = 1) -> dict[str, Any]:
        """``GET /memories/{id}/source-chain``."""
        return self.db.read(lambda conn: source_chain(conn, memory_id, depth))

    def merge(
        self, memory_id: str, target_id: str, *, actor: str, claim: IdempotencyClaim | None = None
    ) -> Committed:
        """``POST /memories/{id}/merge?target_id=``: 201 with the new canonical entry."""
        return self._commit(
            partial(merge_in, source_id=memory_id, target_id=target_id.strip(), actor=actor), claim, 201
        )

    def merge_legacy(
        self, memory_id: str, target_id: str, *, actor: str, claim: IdempotencyClaim | None = None
    ) -> Committed:
        """``POST /memories/{id}/merge-legacy?target_id=``."""
        return self._commit(
            partial(merge_legacy_in, source_id=memory_id, target_id=target_id.strip(), actor=actor),
            claim,
            200,
        )

    def act(
        self, memory_id: str, action: str, *, actor: str, claim: IdempotencyClaim | None = None
    ) -> Committed:
        """``POST /memories/{id}/{pin|unpin|archive|restore}``."""
        if action not in ACTIONS:
            raise InvalidMemoryAction(f"unknown memory action {action!r}")
        return self._commit(partial(act_in, memory_id=memory_id, action=action, actor=actor), claim, 200)

    def request_resynthesis(
        self, memory_id: str, *, actor: str, reason: str | None = None, claim: IdempotencyClaim | None = None
    ) -> Committed:
        """``POST /memories/{id}/resynthesize``: 202 with the recorded request."""
        reason_v = None if reason is None else check_text("reason", reason, limit=2000)
        return self._commit(
            partial(request_resynthesis_in, memory_id=memory_id, reason=reason_v, actor=actor), claim, 202
        )

    def fulfil_resynthesis(
        self,
        request_id: str,
        synthesize: Synthesizer,
        *,
        provider: str,
        actor: str = "supervisor",
    ) -> dict[str, Any]:
        """Fulfil one request through ``synthesize`` (see :func:`fulfil_resynthesis`)."""
        return fulfil_resynthesis(self.db, request_id, synthesize, provider=provider, actor=actor)

    def pending_resynthesis(self, *, limit: int = 100) -> builtins.list[str]:
        """IDs of requests still ``requested``, oldest first."""
        rows = self.db.read(
            lambda conn: conn.execute(
                "SELECT id FROM memory_resynthesis_requests WHERE status = 'requested'"
                " ORDER BY requested_at, id LIMIT ?",
                (limit,),
            ).fetchall()
        )
        return [row["id"] for row in rows]

    def exists(self, memory_id: str) -> bool:
        """Whether an entry with this ID exists."""
        if not is_label(memory_id):
            return False
        row = self.db.read(
            lambda conn: conn.execute("SELECT 1 FROM memory_entries WHERE id = ?", (memory_id,)).fetchone()
        )
        return row is not None
