"""A memory entry as stored, read back from its row: the one record every reader projects.

The memory tools answer with :meth:`MemoryEntry.core`; the HTTP API and the console with
:func:`entry_dict` (every stored field), redacted by :func:`store.memory._views.memory_view`; the
timelines and the oracle's tools read :func:`entry_from_row`. Field names are the columns'
(:mod:`store._rows`), so one converter serves every projection.
"""

from __future__ import annotations

import dataclasses
import json
import operator
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from store._rows import as_dict, from_row

__all__ = [
    "CORE_FIELDS",
    "ENTRY_COLUMNS",
    "MemoryEntry",
    "SummaryResult",
    "core_from_values",
    "entry_dict",
    "entry_from_row",
    "entry_from_values",
    "parse_json_column",
]


@dataclass(frozen=True)
class MemoryEntry:
    """One memory entry, every stored field (in the order the HTTP API shows them)."""

    id: str
    workspace_id: str | None
    scope: str
    kind: str
    title: str
    body_md: str
    tags: list[Any]
    provenance: dict[str, Any]
    source_event_id: int
    source_session_id: str | None
    source_proposal_id: str | None
    confidence: float | None
    reliability: float | None
    importance: int
    status: str
    pinned: bool
    revision: int
    archived_at: str | None
    resynthesis_status: str | None
    created_at: str
    updated_at: str
    checks: list[Any] = dataclasses.field(default_factory=list)
    score: float | None = None

    def core(self) -> dict[str, Any]:
        """The projection the memory tools return (core fields plus revision and provenance).

        ``checks`` is added only when the entry carries some, so other entries answer as before.
        """
        out = {name: getattr(self, name) for name in CORE_FIELDS}
        if self.checks:
            out["checks"] = self.checks
        if self.score is not None:
            out["score"] = self.score
        return out


CORE_FIELDS = (
    "id scope kind title body_md source_event_id importance status created_at updated_at"
    " revision source_proposal_id"
).split()
"""The fields of :meth:`MemoryEntry.core`, in the order the memory tools answer them."""

ENTRY_COLUMNS = ", ".join(
    f"m.{spec.name}" for spec in dataclasses.fields(MemoryEntry) if spec.name != "score"
)
"""The stored columns of :class:`MemoryEntry`, for ``SELECT ... FROM memory_entries AS m``."""


def parse_json_column(text: object, default: Any) -> Any:
    """A JSON column, or ``default`` when it is blank or not valid JSON of the same type."""
    if not isinstance(text, str) or not text.strip():
        return default
    try:
        value = json.loads(text)
    except ValueError:
        return default
    return value if isinstance(value, type(default)) else default


def entry_from_row(row: sqlite3.Row) -> MemoryEntry:
    """Build a :class:`MemoryEntry` from a ``memory_entries`` row (with an optional ``score``)."""
    columns = row.keys()  # a Row's ``in`` looks at its values, not its column names
    score = row["score"] if "score" in columns else None
    return from_row(
        MemoryEntry,
        row,
        tags=parse_json_column(row["tags"], []),
        provenance=parse_json_column(row["provenance"], {}),
        checks=parse_json_column(row["checks"] if "checks" in columns else None, []),
        source_event_id=int(row["source_event_id"] or 0),  # stored as NULL, read back as 0
        importance=int(row["importance"]),
        pinned=bool(row["pinned"]),
        revision=int(row["revision"]),
        score=_score(score),
    )


def _score(score: Any) -> int | float | None:
    """A score as the tools answer it: an integer when it is whole (a count, an importance)."""
    return None if score is None else (int(score) if float(score).is_integer() else float(score))


_STORED = [spec.name for spec in dataclasses.fields(MemoryEntry) if spec.name != "score"]
_TAGS, _PROVENANCE, _CHECKS, _SOURCE_EVENT, _IMPORTANCE, _PINNED, _REVISION = (
    _STORED.index(name)
    for name in ("tags", "provenance", "checks", "source_event_id", "importance", "pinned", "revision")
)


def _json_or(text: object, default: type[list[Any]] | type[dict[str, Any]]) -> Any:
    """:func:`parse_json_column`, without decoding the stored defaults ``[]`` and ``{}``."""
    if (text == "[]" and default is list) or (text == "{}" and default is dict):
        return default()
    return parse_json_column(text, default())


_FIELDS = [spec.name for spec in dataclasses.fields(MemoryEntry)]
_new = object.__new__


def entry_from_values(values: Sequence[Any], score: object = None) -> MemoryEntry:
    """:func:`entry_from_row` for a plain tuple in :data:`ENTRY_COLUMNS` order (extra values after
    them are ignored), with its ``score``: the same record, built without looking columns up by
    name, for the searches that build thousands of entries at a time.

    The fields are set the way the frozen dataclass's ``__init__`` sets them, in its instance
    dict, but at once rather than one ``object.__setattr__`` at a time (which is most of what
    building an entry costs). ``MemoryEntry`` has no ``__post_init__`` and no slots to go around;
    ``tests/store/memory/test_memory_search_index.py`` holds both records equal.
    """
    fields = list(values[: len(_STORED)])
    fields[_TAGS] = _json_or(fields[_TAGS], list)
    fields[_PROVENANCE] = _json_or(fields[_PROVENANCE], dict)
    fields[_CHECKS] = _json_or(fields[_CHECKS], list)
    fields[_SOURCE_EVENT] = int(fields[_SOURCE_EVENT] or 0)  # stored as NULL, read back as 0
    fields[_IMPORTANCE] = int(fields[_IMPORTANCE])
    fields[_PINNED] = bool(fields[_PINNED])
    fields[_REVISION] = int(fields[_REVISION])
    fields.append(_score(score))
    entry: MemoryEntry = _new(MemoryEntry)
    entry.__dict__.update(zip(_FIELDS, fields, strict=True))
    return entry


_CORE_AT = operator.itemgetter(*(_STORED.index(name) for name in CORE_FIELDS))
_CORE_EVENT, _CORE_IMPORTANCE, _CORE_REVISION = (
    CORE_FIELDS.index(name) for name in ("source_event_id", "importance", "revision")
)


def core_from_values(values: Sequence[Any], score: object = None) -> dict[str, Any]:
    """``entry_from_values(values, score).core()``, built from the row at once: the memory tools
    answer only these fields, so neither the whole record is built nor its tags and provenance
    decoded (a third of the cost of an entry of ``memory.query``'s answer; ``limit`` 0 answers
    every entry). ``tests/store/memory/test_memory_core_rows.py`` holds the two equal."""
    fields = list(_CORE_AT(values))
    fields[_CORE_EVENT] = int(fields[_CORE_EVENT] or 0)  # stored as NULL, read back as 0
    fields[_CORE_IMPORTANCE] = int(fields[_CORE_IMPORTANCE])
    fields[_CORE_REVISION] = int(fields[_CORE_REVISION])
    out = dict(zip(CORE_FIELDS, fields, strict=True))
    checks = _json_or(values[_CHECKS], list)
    if checks:
        out["checks"] = checks
    scored = _score(score)
    if scored is not None:
        out["score"] = scored
    return out


def entry_dict(row: sqlite3.Row) -> dict[str, Any]:
    """Every stored field of an entry, unredacted (for the store's own use)."""
    return as_dict(entry_from_row(row), exclude=("score",))


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
