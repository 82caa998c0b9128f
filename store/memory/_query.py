"""Running ``memory.query`` on a connection: its arguments checked (:func:`query_arguments`), then
the path, the ranked keys, then the rows, built as records or as the tools' projection
(:func:`find`'s ``build``).

Three steps, all in the caller's read transaction, so the answer is one snapshot:

1. the path (:func:`trigram_route`), for a substring needle of three characters or more: the
   trigram index (``0009_memory_trigram.sql``) when its candidates are fewer than the rows a
   scan would read (every row, or the rows of the filtered scopes through the scope index);
   each count stops at its bound, so asking costs little, and fewer than :data:`FEW`
   candidates are read as rowids at once. A needle the index cannot find
   (:func:`~store.memory._search.trigram_phrase`) scans. Every path gives the same answer;
   only the rows it reads differ;
2. the keys: one statement finds, scores and orders the matches (:func:`substring_keys`,
   :func:`ranked_keys`) and answers ``(rowid, score)`` only, so SQLite's sorter never holds
   whole entries;
3. the rows (:func:`entries_in_order`): read by rowid, :data:`CHUNK` at a time in rowid order,
   built into entries as they arrive, and answered in the order of the keys. ``limit`` 0 (every
   match) costs the keys plus one pass over the matching rows, in table order.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from store._text import INT64_MAX, MAX_LABEL_CHARS, check_int, check_text
from store.errors import InvalidArgument
from store.memory._entry import ENTRY_COLUMNS, MemoryEntry, entry_from_values
from store.memory._pg_search import pg_search
from store.memory._rank import query_terms
from store.memory._search import (
    SCORE_FUNCTION,
    MemoryFilter,
    candidate_rowids,
    candidates_probe,
    reach_probe,
    substring_keys,
    substring_score,
    trigram_match,
    trigram_phrase,
)

__all__ = [
    "CHUNK",
    "FEW",
    "MAX_QUERY_CHARS",
    "entries_by_id",
    "entries_in_order",
    "find",
    "optional_filter",
    "query_arguments",
    "search",
    "trigram_route",
]

CHUNK = 256
"""Rows read per statement once the keys are known."""

FEW = 1_000
"""Candidates so few that the search takes them from the trigram index without asking what a
scan would read, and reads them once: their rowids, then those rows."""

MAX_QUERY_CHARS = 10_000


def optional_filter(name: str, value: object) -> str | None:
    """A filter argument: ``None`` or ``""`` means not supplied."""
    if value is None or value == "":
        return None
    # Stored values hold no control characters or unpaired surrogates, so neither can match; and a
    # surrogate cannot even be bound as a SQL parameter.
    return check_text(name, value, limit=MAX_LABEL_CHARS, blank_ok=True)


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def query_arguments(
    query: object = None,
    scope: object = None,
    kind: object = None,
    limit: object = None,
    exclude_stale: object = False,
    match: object = "substring",
    *,
    allowed_scopes: frozenset[str] | None = None,
) -> tuple[str, MemoryFilter, bool]:
    """``memory.query``'s arguments checked: the text, the filters, and whether it is ranked."""
    text = query if isinstance(query, str) else ""
    if len(text) > MAX_QUERY_CHARS:
        raise InvalidArgument(f"query is longer than {MAX_QUERY_CHARS} characters")
    if not _encodable(text):
        raise InvalidArgument("query is not valid Unicode (an unpaired surrogate)")
    scope_f = optional_filter("scope", scope)
    kind_f = optional_filter("kind", kind)
    count = check_int("limit", limit, default=10, minimum=-INT64_MAX)
    if not isinstance(exclude_stale, bool):
        raise InvalidArgument("exclude_stale must be a boolean")
    if match not in ("substring", "ranked"):
        raise InvalidArgument('match must be "substring" or "ranked"')
    return text, MemoryFilter(scope_f, kind_f, allowed_scopes, exclude_stale, count), match == "ranked"


_T = TypeVar("_T")
Build = Callable[[Sequence[Any], object], _T]
"""What builds one answer from an entry's row and its score."""

_ROWS = (
    f"SELECT {ENTRY_COLUMNS}, m.rowid FROM memory_entries AS m"
    " WHERE m.rowid IN (SELECT value FROM json_each(?))"
)


def search(
    conn: sqlite3.Connection,
    text: str,
    filters: MemoryFilter,
    *,
    ranked: bool = False,
    indexed: bool | None = None,
) -> list[MemoryEntry]:
    """The entries ``memory.query`` answers for ``text`` (not yet lower-cased) and ``filters``.

    ``indexed`` overrides step 1 for tests and benchmarks: ``True`` joins the trigram index
    whenever the needle allows it, ``False`` always scans; ``None`` (the store's) decides.
    """
    return find(conn, text, filters, entry_from_values, ranked=ranked, indexed=indexed)


def find(
    conn: sqlite3.Connection,
    text: str,
    filters: MemoryFilter,
    build: Build[_T],
    *,
    ranked: bool = False,
    indexed: bool | None = None,
) -> list[_T]:
    """:func:`search`, each answer built from its row (:data:`~store.memory._entry.ENTRY_COLUMNS`)
    and score by ``build``: a record (:func:`~store.memory._entry.entry_from_values`) or only
    the projection the memory tools answer (:func:`~store.memory._entry.core_from_values`)."""
    if ranked and query_terms(text):  # the same tables and code on both backends
        # imported here: the ranked search brings numpy (~100 ms), which a substring query, a
        # cold launch's oracle and every CLI command that opens the store never need
        from store.memory._ranked import ranked_ids

        return entries_by_id(conn, ranked_ids(conn, text, filters), build)
    if ranked:
        text = ""  # no term at all: every entry, by importance
    if getattr(conn, "backend", "sqlite") == "postgresql":  # store/db/_pg_sql.py: its own dialect
        return pg_search(conn, text, filters, build)
    needle = text.lower()
    route = trigram_route(conn, needle, filters) if indexed is None else indexed
    can_index = trigram_phrase(needle) is not None
    few = route if isinstance(route, list) and can_index else None
    sql, params = substring_keys(needle, filters, indexed=route is True and can_index, candidates=few)
    return entries_in_order(conn, _scored_keys(conn, sql, params), build)


def _scored_keys(conn: sqlite3.Connection, sql: str, params: dict[str, Any]) -> list[tuple[int, Any]]:
    """The keys statement's rows, :data:`SCORE_FUNCTION` defined on ``conn`` the first time it is
    missing there rather than before every search: defining a function expires every statement
    SQLite has prepared on the connection, so each search re-prepared its statements (and the next
    request's), ~0.07 ms of a 0.35 ms query. The statement fails at its preparation, before any
    row, so it is simply run again."""
    cursor = conn.cursor()
    cursor.row_factory = None
    try:
        return cursor.execute(sql, params).fetchall()
    except sqlite3.OperationalError as exc:
        if SCORE_FUNCTION not in str(exc):
            raise
    conn.create_function(SCORE_FUNCTION, 5, substring_score, deterministic=True)
    return cursor.execute(sql, params).fetchall()


def trigram_route(conn: sqlite3.Connection, needle: str, filters: MemoryFilter) -> list[int] | bool:
    """How the search reads ``needle``'s candidates: their rowids when the trigram index holds
    fewer than :data:`FEW` (read here, once, and not matched again); ``True`` to join the index
    when it reads fewer rows than a scan would; ``False`` to scan, also when the index cannot
    find the needle at all.

    The few are asked first of the cheap cover (:func:`~store.memory._search.trigram_match`),
    then of the exact phrase (:func:`~store.memory._search.trigram_phrase`). Past them a scan of
    the whole table, which reads rows in order and so more cheaply than the index's lookups, wins
    from half of its rows on; a scan through a scope filter reads rows by lookup too, and wins
    once the scope holds fewer rows than the index has candidates. Every read of the index stops
    at the bound it is tested against.
    """
    phrase = trigram_phrase(needle)
    cover = trigram_match(needle)
    if phrase is None or cover is None:
        return False
    for match in dict.fromkeys((cover, phrase)):
        few = [row[0] for row in conn.execute(*candidate_rowids(match, FEW))]
        if len(few) < FEW:
            return few
    total = _count(conn, ("SELECT coalesce(max(rowid), 0) FROM memory_entries", {}))  # >= the rows
    probe = reach_probe(filters, total)
    bound = total // 2 if probe is None else _count(conn, probe)
    return _count(conn, candidates_probe(phrase, bound + 1)) <= bound


def _count(conn: sqlite3.Connection, statement: tuple[str, dict[str, Any]]) -> int:
    return int(conn.execute(*statement).fetchone()[0])


def entries_in_order(conn: sqlite3.Connection, keys: Sequence[tuple[int, Any]], build: Build[_T]) -> list[_T]:
    """The entries of ``(rowid, score)`` keys, in the keys' order, each built by ``build``.

    Read :data:`CHUNK` rows at a time in rowid order, not in the keys' order: each statement then
    walks one stretch of the table, the pages of one chunk are the next chunk's neighbours, and
    every match of a common needle (``limit`` 0) costs about what a scan reading them costs,
    where chunks in score order each touched the whole table (x3.6 the time per row at 25,600 of
    100,000 entries). The entries are built as their rows arrive and answered in the keys' order.
    """
    cursor = conn.cursor()
    cursor.row_factory = None
    scores = dict(keys)
    built: dict[int, _T] = {}
    ordered = sorted(scores)
    for start in range(0, len(ordered), CHUNK):
        wanted = "[" + ",".join(map(str, ordered[start : start + CHUNK])) + "]"
        for row in cursor.execute(_ROWS, (wanted,)):
            built[row[-1]] = build(row, scores[row[-1]])
    return [built[rowid] for rowid, _ in keys]


def entries_by_id(conn: Any, keys: Sequence[tuple[str, float]], build: Build[_T]) -> list[_T]:
    """The entries of ``(id, score)`` keys, in the keys' order (on either backend), built by ``build``."""
    built: dict[str, _T] = {}
    for start in range(0, len(keys), CHUNK):
        chunk = [entry_id for entry_id, _ in keys[start : start + CHUNK]]
        sql = f"SELECT {ENTRY_COLUMNS} FROM memory_entries AS m WHERE m.id IN ({', '.join('?' * len(chunk))})"
        scores = dict(keys[start : start + CHUNK])
        for row in conn.execute(sql, chunk).fetchall():
            built[row[0]] = build(row, scores[row[0]])
    return [built[entry_id] for entry_id, _ in keys]
