"""A new memory entry, validated: the one type every creation writes, and the one validator.

``memory.record`` (MCP and CLI), ``POST /memories`` (HTTP) and a merge all create entries through
:class:`NewEntry` and :func:`store.memory._write.insert_entry`. The two callers' contracts (CONTRACTS,
"Memory tools" and the HTTP table) read the same fields with the same text rule
(:func:`store._text.check_text`); where they differ, an :class:`EntryContract` says how:

- fields: ``memory.record`` (:data:`RECORD`) takes the core fields, ``memory_id`` and
  ``status``; ``POST /memories`` (:data:`HTTP_CREATE`) the core fields, tags, provenance (whose
  ``sources`` become edges), the session and proposal IDs, confidence and reliability;
- refusal: ``invalid_argument`` for ``memory.record``, ``invalid_memory`` over HTTP;
- text: ``memory.record`` stores it as given, HTTP redacts secrets (title, body, tags, provenance);
- ``importance`` 0: becomes 50 for ``memory.record``, stays 0 over HTTP;
- confidence and reliability: not ``memory.record`` fields (NULL); over HTTP 0..1, default 0.5.

Shared by both: ``checks`` (executable checks, :mod:`store.memory._checks`) only on a decision or
a constraint, refused with the caller's error otherwise (omitted on a replacement: kept, as an
extra field); ``source_event_id`` is an integer of at
least 0, and 0 is stored as NULL. A merge
builds its :class:`NewEntry` from two stored entries, already checked when they were written.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from store._text import INT64_MAX, MAX_LABEL_CHARS, check_fraction, check_int, check_label, check_text
from store.errors import InvalidArgument, InvalidMemory
from store.memory._checks import validate_checks
from store.memory._redaction import redact, redact_json

__all__ = [
    "HTTP_CREATE",
    "MAX_BODY_CHARS",
    "MAX_PROVENANCE_BYTES",
    "MAX_SOURCES",
    "MAX_TAGS",
    "MAX_TITLE_CHARS",
    "RECORD",
    "EntryContract",
    "NewEntry",
    "Source",
    "check_int",
]

MAX_TITLE_CHARS = 1_000
MAX_BODY_CHARS = 200_000
MAX_TAGS = 100
MAX_SOURCES = 100
MAX_PROVENANCE_BYTES = 64 * 1024
_CORE = frozenset({"scope", "kind", "title", "body_md", "source_event_id", "importance", "checks"})

Source = tuple[str, str, str]
"""A provenance source of a new entry: ``(source_type, source_id, relation)``, one edge each."""


@dataclass(frozen=True)
class EntryContract:
    """How one caller's contract reads the fields of a new entry (see the module docstring)."""

    fields: frozenset[str]
    error: type[InvalidArgument]
    redact: bool
    zero_importance_is_default: bool
    unit_default: float | None


RECORD = EntryContract(
    fields=_CORE | {"memory_id", "status"},
    error=InvalidArgument,
    redact=False,
    zero_importance_is_default=True,
    unit_default=None,
)
"""``memory.record`` (CONTRACTS, "Memory tools")."""

HTTP_CREATE = EntryContract(
    fields=_CORE
    | {"tags", "provenance", "source_session_id", "source_proposal_id", "confidence", "reliability"},
    error=InvalidMemory,
    redact=True,
    zero_importance_is_default=False,
    unit_default=0.5,
)
"""``POST /memories`` (CONTRACTS, "HTTP API")."""


@dataclass(frozen=True)
class NewEntry:
    """A new entry, checked and ready to insert: ``id`` ``None`` means a fresh ``M-`` ID."""

    id: str | None
    scope: str
    kind: str
    title: str
    body_md: str
    status: str = "active"
    source_event_id: int = 0
    importance: int = 50
    tags: tuple[str, ...] = ()
    provenance: dict[str, Any] = field(default_factory=dict)
    sources: tuple[Source, ...] = ()
    source_session_id: str | None = None
    source_proposal_id: str | None = None
    confidence: float | None = None
    reliability: float | None = None
    checks: list[dict[str, Any]] | None = None
    """``None``: not given (a new entry has none; a replacement keeps the stored ones)."""

    @classmethod
    def validate(cls, fields: Mapping[str, Any], contract: EntryContract) -> NewEntry:
        """Check ``fields`` against ``contract``; ``contract.error`` on the first problem."""
        error = contract.error
        unknown = sorted(set(fields) - contract.fields)
        if unknown:
            raise error(f"unknown field(s): {', '.join(unknown)}")
        scrub = redact if contract.redact else _as_given

        def text(name: str, limit: int) -> str:
            return check_text(name, fields.get(name), limit=limit, error=error)

        provenance = _provenance(fields.get("provenance"), error)
        importance = check_int(
            "importance", fields.get("importance"), default=50, minimum=-INT64_MAX, error=error
        )
        memory_id, status = fields.get("memory_id"), fields.get("status")
        kind = text("kind", MAX_LABEL_CHARS)
        return cls(
            id=None if memory_id in (None, "") else check_label("memory_id", memory_id, error=error),
            scope=text("scope", MAX_LABEL_CHARS),
            kind=kind,
            title=scrub(text("title", MAX_TITLE_CHARS)),
            body_md=scrub(text("body_md", MAX_BODY_CHARS)),
            status="active" if status is None else text("status", MAX_LABEL_CHARS),
            source_event_id=check_int(
                "source_event_id", fields.get("source_event_id"), default=0, minimum=0, error=error
            ),
            importance=50 if importance == 0 and contract.zero_importance_is_default else importance,
            tags=tuple(scrub(tag) for tag in _tags(fields.get("tags"), error)),
            provenance=redact_json(provenance) if contract.redact else provenance,
            sources=tuple(
                (kind, scrub(source), relation) for kind, source, relation in _sources(provenance, error)
            ),
            source_session_id=_optional_label("source_session_id", fields, error),
            source_proposal_id=_optional_label("source_proposal_id", fields, error),
            confidence=_unit("confidence", fields.get("confidence"), contract.unit_default, error),
            reliability=_unit("reliability", fields.get("reliability"), contract.unit_default, error),
            checks=None
            if fields.get("checks") is None
            else validate_checks(fields["checks"], entry_kind=kind, error=error),
        )


def _as_given(text: str) -> str:
    return text


def _unit(name: str, value: object, default: float | None, error: type[InvalidArgument]) -> float | None:
    return default if value is None else check_fraction(name, value, error=error)


def _optional_label(name: str, fields: Mapping[str, Any], error: type[InvalidArgument]) -> str | None:
    value = fields.get(name)
    if value is None or value == "":
        return None
    return check_text(name, value, limit=MAX_LABEL_CHARS, error=error)


def _tags(value: object, error: type[InvalidArgument]) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or len(value) > MAX_TAGS:
        raise error(f"tags must be a list of at most {MAX_TAGS} strings")
    return [check_text("tags[]", tag, limit=MAX_LABEL_CHARS, error=error) for tag in value]


def _provenance(value: object, error: type[InvalidArgument]) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise error("provenance must be an object")
    try:
        size = len(json.dumps(value).encode("utf-8"))
    except (TypeError, ValueError, UnicodeEncodeError):
        raise error("provenance must be plain JSON") from None
    if size > MAX_PROVENANCE_BYTES:
        raise error(f"provenance is larger than {MAX_PROVENANCE_BYTES} bytes")
    return value


def _sources(provenance: dict[str, Any], error: type[InvalidArgument]) -> list[Source]:
    """``provenance.sources``: ``[{"type", "id", "relation"?}]`` -> ``(type, id, relation)``."""
    raw = provenance.get("sources")
    if raw is None:
        return []
    if not isinstance(raw, list) or len(raw) > MAX_SOURCES:
        raise error(f"provenance.sources must be a list of at most {MAX_SOURCES} items")
    out = []
    for index, item in enumerate(raw):
        where = f"provenance.sources[{index}]"
        if not isinstance(item, dict):
            raise error(f'{where} must be an object {{"type", "id", "relation"?}}')
        source_id = item.get("id")
        if isinstance(source_id, int) and not isinstance(source_id, bool):
            source_id = str(source_id)
        parts = (
            ("type", item.get("type")),
            ("id", source_id),
            ("relation", item.get("relation", "derived_from")),
        )
        kind, ident, relation = (
            check_text(f"{where}.{part}", value, limit=MAX_LABEL_CHARS, error=error) for part, value in parts
        )
        out.append((kind, ident, relation))
    return out
