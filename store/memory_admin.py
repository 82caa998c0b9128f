"""Memory administration for the HTTP API and the console: create, list, detail, and the facade.

:class:`MemoryAdmin` gathers every operation of the memory routes (CONTRACTS, "HTTP API"); the
history, link and action operations live in :mod:`store.memory_history`,
:mod:`store.memory_links` and :mod:`store.memory_actions`. Each mutation is validated first,
then runs as one write transaction that makes the change, appends its event and its audit row,
and (with an ``Idempotency-Key``) stores its answer, all or nothing.

Fixed here against the seed:

- create checks ``confidence``/``reliability`` lie in 0..1 (default 0.5), writes revision 1 to
  the history and a provenance edge for each ``provenance.sources`` item, and redacts the title
  as well as the body (and tags and provenance);
- list matches ``q`` as a literal, case-insensitive substring of the title or body: it uses
  ``instr`` on the lower-cased shadow columns, never ``LIKE``, so ``%`` and ``_`` are plain
  characters. The cursor is opaque (base64 of the last ``(created_at, id)``).
"""

from __future__ import annotations

import base64
import binascii
import builtins
import json
import math
import sqlite3
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

from store.db import Database
from store.errors import Conflict, InvalidArgument
from store.idempotency import Committed, IdempotencyClaim, commit
from store.ids import new_id, utc_now_iso
from store.memory_actions import ACTIONS, Synthesizer, act_in, fulfil_resynthesis, request_resynthesis_in
from store.memory_base import (
    MAX_LABEL_CHARS,
    load_memory,
    memory_view,
    record_change,
    require_text,
    revision_row,
    valid_memory_id,
)
from store.memory_history import diff_revisions, list_revisions, prepare_revision
from store.memory_links import alias_graph, merge_in, merge_legacy_in, resolve_aliases, source_chain
from store.redaction import redact, redact_json

__all__ = ["MAX_PAGE", "MemoryAdmin", "NewMemory", "decode_cursor", "encode_cursor"]

MAX_PAGE = 200
DEFAULT_PAGE = 50
MAX_TITLE_CHARS = 1_000
MAX_BODY_CHARS = 200_000
MAX_TAGS = 100
MAX_SOURCES = 100
MAX_PROVENANCE_BYTES = 64 * 1024
MAX_QUERY_CHARS = 1_000
_INT64 = 2**63 - 1
_INVALID = "invalid_memory"


@dataclass(frozen=True)
class NewMemory:
    """A validated, redacted ``POST /memories`` body."""

    scope: str
    kind: str
    title: str
    body_md: str
    tags: list[str]
    provenance: dict[str, Any]
    sources: list[tuple[str, str, str]]
    source_event_id: int
    source_session_id: str | None
    source_proposal_id: str | None
    confidence: float
    reliability: float
    importance: int

    @classmethod
    def validate(cls, fields: Mapping[str, Any]) -> NewMemory:
        """Check every field; :class:`InvalidArgument` with code ``invalid_memory`` on the first problem."""
        known = {
            "scope",
            "kind",
            "title",
            "body_md",
            "tags",
            "provenance",
            "source_event_id",
            "source_session_id",
            "source_proposal_id",
            "confidence",
            "reliability",
            "importance",
        }
        unknown = sorted(set(fields) - known)
        if unknown:
            raise InvalidArgument(f"unknown field(s): {', '.join(unknown)}", code=_INVALID)
        provenance = _provenance(fields.get("provenance"))
        return cls(
            scope=require_text("scope", fields.get("scope"), code=_INVALID, limit=MAX_LABEL_CHARS),
            kind=require_text("kind", fields.get("kind"), code=_INVALID, limit=MAX_LABEL_CHARS),
            title=redact(require_text("title", fields.get("title"), code=_INVALID, limit=MAX_TITLE_CHARS)),
            body_md=redact(
                require_text("body_md", fields.get("body_md"), code=_INVALID, limit=MAX_BODY_CHARS)
            ),
            tags=[redact(tag) for tag in _tags(fields.get("tags"))],
            provenance=redact_json(provenance),
            sources=_sources(provenance),
            source_event_id=_integer("source_event_id", fields.get("source_event_id"), 0, minimum=0),
            source_session_id=_optional_label("source_session_id", fields.get("source_session_id")),
            source_proposal_id=_optional_label("source_proposal_id", fields.get("source_proposal_id")),
            confidence=_unit("confidence", fields.get("confidence")),
            reliability=_unit("reliability", fields.get("reliability")),
            importance=_integer("importance", fields.get("importance"), 50),
        )


def _unit(name: str, value: object) -> float:
    if value is None:
        return 0.5
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidArgument(f"{name} must be a number from 0 to 1", code=_INVALID)
    number = float(value)
    if math.isnan(number) or not 0.0 <= number <= 1.0:
        raise InvalidArgument(f"{name} must lie between 0 and 1", code=_INVALID)
    return number


def _integer(name: str, value: object, default: int, *, minimum: int = -_INT64) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= _INT64:
        raise InvalidArgument(f"{name} must be an integer of at least {minimum}", code=_INVALID)
    return value


def _optional_label(name: str, value: object) -> str | None:
    if value is None or value == "":
        return None
    return require_text(name, value, code=_INVALID, limit=MAX_LABEL_CHARS)


def _tags(value: object) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or len(value) > MAX_TAGS:
        raise InvalidArgument(f"tags must be a list of at most {MAX_TAGS} strings", code=_INVALID)
    return [require_text("tags[]", tag, code=_INVALID, limit=MAX_LABEL_CHARS) for tag in value]


def _provenance(value: object) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InvalidArgument("provenance must be an object", code=_INVALID)
    try:
        size = len(json.dumps(value).encode("utf-8"))
    except (TypeError, ValueError, UnicodeEncodeError):
        raise InvalidArgument("provenance must be plain JSON", code=_INVALID) from None
    if size > MAX_PROVENANCE_BYTES:
        raise InvalidArgument(f"provenance is larger than {MAX_PROVENANCE_BYTES} bytes", code=_INVALID)
    return value


def _sources(provenance: dict[str, Any]) -> list[tuple[str, str, str]]:
    """``provenance.sources``: ``[{"type", "id", "relation"?}]`` -> ``(type, id, relation)``."""
    raw = provenance.get("sources")
    if raw is None:
        return []
    if not isinstance(raw, list) or len(raw) > MAX_SOURCES:
        raise InvalidArgument(
            f"provenance.sources must be a list of at most {MAX_SOURCES} items", code=_INVALID
        )
    out = []
    for index, item in enumerate(raw):
        where = f"provenance.sources[{index}]"
        if not isinstance(item, dict):
            raise InvalidArgument(f'{where} must be an object {{"type", "id", "relation"?}}', code=_INVALID)
        source_id = item.get("id")
        if isinstance(source_id, int) and not isinstance(source_id, bool):
            source_id = str(source_id)
        out.append(
            (
                require_text(f"{where}.type", item.get("type"), code=_INVALID, limit=MAX_LABEL_CHARS),
                redact(require_text(f"{where}.id", source_id, code=_INVALID, limit=MAX_LABEL_CHARS)),
                require_text(
                    f"{where}.relation",
                    item.get("relation", "derived_from"),
                    code=_INVALID,
                    limit=MAX_LABEL_CHARS,
                ),
            )
        )
    return out


def _create_in(conn: sqlite3.Connection, new: NewMemory, *, actor: str) -> dict[str, Any]:
    memory_id, now = new_id("memory"), utc_now_iso()
    conn.execute(
        "INSERT INTO memory_entries (id, scope, kind, title, body_md, source_event_id, importance, status,"
        " created_at, updated_at, tags, provenance, source_session_id, source_proposal_id, confidence,"
        " reliability, pinned, revision, lc_title, lc_body, lc_scope, lc_kind)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, 'active', ?, ?, ?, ?, ?, ?, ?, ?, 0, 1, ?, ?, ?, ?)",
        (
            memory_id,
            new.scope,
            new.kind,
            new.title,
            new.body_md,
            new.source_event_id or None,
            new.importance,
            now,
            now,
            json.dumps(new.tags),
            json.dumps(new.provenance, sort_keys=True),
            new.source_session_id,
            new.source_proposal_id,
            new.confidence,
            new.reliability,
            new.title.lower(),
            new.body_md.lower(),
            new.scope.lower(),
            new.kind.lower(),
        ),
    )
    revision_row(
        conn,
        memory_id,
        1,
        title=new.title,
        body_md=new.body_md,
        reason="created",
        actor=actor,
        now=now,
        provenance={"via": "http", "sources": len(new.sources)},
    )
    conn.executemany(
        "INSERT INTO memory_provenance_edges (memory_id, source_type, source_id, relation, created_at)"
        " VALUES (?, ?, ?, ?, ?)",
        [(memory_id, kind, source, relation, now) for kind, source, relation in new.sources],
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


def encode_cursor(created_at: str, memory_id: str) -> str:
    """An opaque cursor for the position after ``(created_at, memory_id)``."""
    raw = json.dumps([created_at, memory_id], separators=(",", ":")).encode("utf-8")
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def decode_cursor(cursor: str) -> tuple[str, str]:
    """The position a cursor stands for, or ``invalid_argument``."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        created_at, memory_id = json.loads(raw.decode("utf-8"))
    except (binascii.Error, ValueError, TypeError, UnicodeDecodeError):
        raise InvalidArgument("cursor is not one this API returned") from None
    if not isinstance(created_at, str) or not isinstance(memory_id, str):
        raise InvalidArgument("cursor is not one this API returned")
    return created_at, memory_id


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
        self, fields: Mapping[str, Any], *, actor: str, claim: IdempotencyClaim | None = None
    ) -> Committed:
        """``POST /memories``: 201 ``{"memory"}``."""
        new = NewMemory.validate(fields)
        return self._commit(partial(_create_in, new=new, actor=actor), claim, 201)

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
                raise Conflict(
                    f"the aliases of {memory_id} form a cycle: {' -> '.join(chain)}",
                    code="memory_alias_cycle",
                )
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
        """``POST /memories/{id}/revisions`` (see :mod:`store.memory_history`)."""
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
            raise InvalidArgument(f"unknown memory action {action!r}", code="invalid_memory_action")
        return self._commit(partial(act_in, memory_id=memory_id, action=action, actor=actor), claim, 200)

    def request_resynthesis(
        self, memory_id: str, *, actor: str, reason: str | None = None, claim: IdempotencyClaim | None = None
    ) -> Committed:
        """``POST /memories/{id}/resynthesize``: 202 with the recorded request."""
        reason_v = (
            None if reason is None else require_text("reason", reason, code="invalid_argument", limit=2000)
        )
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
        """Fulfil one request through ``synthesize`` (see :func:`store.memory_actions.fulfil_resynthesis`)."""
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
        if not valid_memory_id(memory_id):
            return False
        row = self.db.read(
            lambda conn: conn.execute("SELECT 1 FROM memory_entries WHERE id = ?", (memory_id,)).fetchone()
        )
        return row is not None
