"""Identifiers: a prefix, a UTC timestamp and a random suffix.

``M-20261129T225700123456Z-3f9a1c`` sorts by creation time and stays unique under concurrency
(the suffix carries 48 random bits), across processes as well as threads.

IDs are long, so a caller may name a record by any unique prefix of its ID, as git takes a commit
by an abbreviated hash: :func:`resolve_id_prefix` finds the one record a prefix names, or says the
prefix is ambiguous (``invalid_argument``, listing candidates); a prefix that names nothing is left
for the lookup that follows to report (``not_found``).
"""

from __future__ import annotations

import secrets
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from store.errors import InvalidArgument

if TYPE_CHECKING:
    import sqlite3

__all__ = [
    "ID_TABLES",
    "MAX_CANDIDATES",
    "MIN_PREFIX_DIGITS",
    "PREFIXES",
    "new_id",
    "resolve_id_prefix",
    "utc_now",
    "utc_now_iso",
]

PREFIXES = {
    "task": "T",
    "proposal": "P",
    "vote": "V",
    "decision": "D",
    "memory": "M",
    "grant": "C",
    "launch": "L",
    "round": "R",
    "token": "K",
}


def utc_now() -> datetime:
    """The current time, timezone-aware UTC."""
    return datetime.now(UTC)


def utc_now_iso() -> str:
    """The current time as RFC 3339 UTC with microseconds, e.g. ``2026-11-29T22:57:00.123456Z``."""
    return utc_now().strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def new_id(kind: str) -> str:
    """A fresh ID for an object of ``kind`` (a key of :data:`PREFIXES`, or a literal prefix)."""
    prefix = PREFIXES.get(kind, kind)
    stamp = utc_now().strftime("%Y%m%dT%H%M%S%fZ")
    return f"{prefix}-{stamp}-{secrets.token_hex(6)}"


ID_TABLES = {
    "task": "tasks",
    "proposal": "proposals",
    "vote": "votes",
    "decision": "decisions",
    "memory": "memory_entries",
    "grant": "capability_grants",
    "launch": "role_launches",
    "round": "review_rounds",
    "token": "operator_tokens",
}
"""The table holding each kind of record, by its ``id`` column."""

MIN_PREFIX_DIGITS = 4
"""A prefix holds at least this many characters past ``P-`` (``P-2026``): shorter ones name too much."""

MAX_CANDIDATES = 10
"""How many matching IDs an ambiguous prefix's error lists."""

_FULL_LENGTH = len(new_id("task"))


def _like_literal(text: str) -> str:
    """``text`` as a literal ``LIKE`` pattern (``ESCAPE '\\'``): ``%`` and ``_`` match themselves."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def resolve_id_prefix(conn: sqlite3.Connection, kind: str, text: str) -> str:
    """The full ID of the one ``kind`` record whose ID starts with ``text``.

    An exact ID is returned as it is. So is anything that names no record: a value that is not an
    ID of this kind (no ``P-`` for a proposal), a full-length ID, a prefix nothing starts with; the
    lookup that follows then reports its own ``not_found``, as it always has. A prefix that does
    match is refused (``invalid_argument``) when it has fewer than :data:`MIN_PREFIX_DIGITS`
    characters after the type prefix, and when it matches several IDs: the error lists up to
    :data:`MAX_CANDIDATES` of them in ``details.candidates``. ``%`` and ``_`` match themselves.
    """
    table = ID_TABLES[kind]
    head = f"{PREFIXES[kind]}-"
    if not text.startswith(head) or len(text) >= _FULL_LENGTH:
        return text
    if conn.execute(f"SELECT 1 FROM {table} WHERE id = ?", (text,)).fetchone() is not None:
        return text
    rows = conn.execute(
        f"SELECT id FROM {table} WHERE id LIKE ? ESCAPE '\\' ORDER BY id LIMIT ?",
        (_like_literal(text) + "%", MAX_CANDIDATES + 1),
    ).fetchall()
    # LIKE ignores ASCII case, so "...-D19" finds "...-d19", as git takes hashes in either case.
    found = [str(row[0]) for row in rows]
    if not found:
        return text
    if len(text) < len(head) + MIN_PREFIX_DIGITS:
        raise InvalidArgument(
            f"{kind} ID prefix {text!r} is too short: give at least"
            f" {len(head) + MIN_PREFIX_DIGITS} characters (e.g. {head}2026...)"
        )
    if len(found) > 1:
        shown = found[:MAX_CANDIDATES]
        more = " (and more)" if len(found) > MAX_CANDIDATES else ""
        raise InvalidArgument(
            f"{kind} ID prefix {text!r} is ambiguous: it matches {len(shown)}{more} IDs;"
            " give more characters",
            details={"kind": kind, "prefix": text, "candidates": shown, "truncated": bool(more)},
        )
    return found[0]
