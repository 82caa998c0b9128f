"""A memory entry as stored, and the validation of ``memory.record`` input.

Shared by the memory tools (:mod:`store.memory._store`) and anything that reads entries (timelines, the
oracle's tools): one projection, one set of limits, one validator.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from typing import Any

from store.errors import InvalidArgument
from store.memory._views import MAX_LABEL_CHARS, valid_memory_id
from store.memory._views import require_text as base_require_text

__all__ = [
    "ENTRY_COLUMNS",
    "MAX_BODY_CHARS",
    "MAX_LABEL_CHARS",
    "MAX_QUERY_CHARS",
    "MAX_TITLE_CHARS",
    "MemoryEntry",
    "MemoryRecord",
    "SummaryResult",
    "check_memory_id",
    "entry_from_row",
    "optional_filter",
    "optional_int",
    "require_text",
]

MAX_TITLE_CHARS = 1_000
MAX_BODY_CHARS = 200_000
MAX_QUERY_CHARS = 10_000
_INT64_MAX = 2**63 - 1
ENTRY_COLUMNS = ", ".join(
    f"m.{name}"
    for name in (
        "id scope kind title body_md source_event_id importance status created_at updated_at workspace_id"
        " tags provenance source_session_id source_proposal_id confidence reliability pinned revision"
        " archived_at resynthesis_status"
    ).split()
)


@dataclass(frozen=True)
class MemoryEntry:
    """One memory entry, every stored field."""

    id: str
    scope: str
    kind: str
    title: str
    body_md: str
    source_event_id: int
    importance: int
    status: str
    created_at: str
    updated_at: str
    revision: int
    source_proposal_id: str | None
    workspace_id: str | None
    tags: list[Any]
    provenance: dict[str, Any]
    source_session_id: str | None
    confidence: float | None
    reliability: float | None
    pinned: bool
    archived_at: str | None
    resynthesis_status: str | None
    score: float | None = None

    def core(self) -> dict[str, Any]:
        """The projection the memory tools return (core fields plus revision and provenance)."""
        out: dict[str, Any] = {
            "id": self.id,
            "scope": self.scope,
            "kind": self.kind,
            "title": self.title,
            "body_md": self.body_md,
            "source_event_id": self.source_event_id,
            "importance": self.importance,
            "status": self.status,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "revision": self.revision,
            "source_proposal_id": self.source_proposal_id,
        }
        if self.score is not None:
            out["score"] = self.score
        return out


def entry_from_row(row: sqlite3.Row) -> MemoryEntry:
    """Build a :class:`MemoryEntry` from a ``memory_entries`` row (with an optional score)."""
    keys = row.keys()
    score = row["score"] if "score" in keys else None
    return MemoryEntry(
        id=row["id"],
        scope=row["scope"],
        kind=row["kind"],
        title=row["title"],
        body_md=row["body_md"],
        source_event_id=int(row["source_event_id"] or 0),
        importance=int(row["importance"]),
        status=row["status"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        revision=int(row["revision"]),
        source_proposal_id=row["source_proposal_id"],
        workspace_id=row["workspace_id"],
        tags=json.loads(row["tags"] or "[]"),
        provenance=json.loads(row["provenance"] or "{}"),
        source_session_id=row["source_session_id"],
        confidence=row["confidence"],
        reliability=row["reliability"],
        pinned=bool(row["pinned"]),
        archived_at=row["archived_at"],
        resynthesis_status=row["resynthesis_status"],
        score=None if score is None else (int(score) if float(score).is_integer() else float(score)),
    )


@dataclass(frozen=True)
class SummaryResult:
    """What ``memory.summarize`` answers."""

    entries: list[MemoryEntry]
    summary_md: str

    def to_dict(self) -> dict[str, Any]:
        """``{"entries", "entry_count", "summary_md"}``."""
        return {
            "entries": [entry.core() for entry in self.entries],
            "entry_count": len(self.entries),
            "summary_md": self.summary_md,
        }


def require_text(name: str, value: object, *, limit: int) -> str:
    """A required, nonblank text field of ``memory.record`` (``invalid_argument`` otherwise)."""
    return base_require_text(name, value, code=InvalidArgument.code, limit=limit)


def optional_int(name: str, value: object, default: int, *, minimum: int | None = None) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgument(f"{name} must be an integer")
    if not -_INT64_MAX <= value <= _INT64_MAX:
        raise InvalidArgument(f"{name} is out of range")
    if minimum is not None and value < minimum:
        raise InvalidArgument(f"{name} must be at least {minimum}")
    return value


def optional_filter(name: str, value: object) -> str | None:
    """A filter argument: ``None`` or ``""`` means not supplied."""
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise InvalidArgument(f"{name} must be a string")
    if len(value) > MAX_LABEL_CHARS:
        raise InvalidArgument(f"{name} is longer than {MAX_LABEL_CHARS} characters")
    return value


def check_memory_id(value: object) -> str:
    """Validate a memory ID argument."""
    memory_id = require_text("memory_id", value, limit=MAX_LABEL_CHARS)
    if not valid_memory_id(memory_id):
        raise InvalidArgument("memory_id may hold only letters, digits, '.', '_', ':' and '-'")
    return memory_id


@dataclass(frozen=True)
class MemoryRecord:
    """A validated ``memory.record`` input."""

    scope: str
    kind: str
    title: str
    body_md: str
    source_event_id: int
    importance: int
    memory_id: str | None
    status: str

    @classmethod
    def validate(
        cls,
        *,
        scope: object,
        kind: object,
        title: object,
        body_md: object,
        source_event_id: object = None,
        importance: object = None,
        memory_id: object = None,
        status: object = None,
    ) -> MemoryRecord:
        """Check every field against the contract; :class:`InvalidArgument` on the first problem."""
        return cls(
            scope=require_text("scope", scope, limit=MAX_LABEL_CHARS),
            kind=require_text("kind", kind, limit=MAX_LABEL_CHARS),
            title=require_text("title", title, limit=MAX_TITLE_CHARS),
            body_md=require_text("body_md", body_md, limit=MAX_BODY_CHARS),
            source_event_id=optional_int("source_event_id", source_event_id, 0, minimum=0),
            importance=optional_int("importance", importance, 50) or 50,
            memory_id=None if memory_id is None or memory_id == "" else check_memory_id(memory_id),
            status="active" if status is None else require_text("status", status, limit=MAX_LABEL_CHARS),
        )
