"""Creating memory entries over HTTP: ``POST /memories`` validated, redacted and written.

Fixed against the seed: ``confidence``/``reliability`` default to 0.5 and must lie in 0..1; the
new entry gets revision 1 in its history and a provenance edge per ``provenance.sources`` item;
the title is redacted as well as the body (and tags, provenance and source IDs too). The entry,
its history row, its edges, its event and its audit row are written in one transaction.
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from store._ids import new_id, utc_now_iso
from store.errors import InvalidArgument
from store.memory._entry import MAX_BODY_CHARS, MAX_TITLE_CHARS
from store.memory._redaction import redact, redact_json
from store.memory._views import (
    MAX_LABEL_CHARS,
    load_memory,
    memory_view,
    record_change,
    require_text,
    revision_row,
)

__all__ = ["NewMemory", "create_in"]

MAX_TAGS = 100
MAX_SOURCES = 100
MAX_PROVENANCE_BYTES = 64 * 1024
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


def create_in(conn: sqlite3.Connection, new: NewMemory, *, actor: str) -> dict[str, Any]:
    """Write a validated entry, its revision 1, its edges, event and audit row; ``{"memory"}``."""
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
