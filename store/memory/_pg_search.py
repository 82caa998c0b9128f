"""``memory.query`` on PostgreSQL: the same contract as :mod:`store.memory._query`, in its dialect.

- **substring** (the seed's contract): the same score, counted the same way on the lower-cased
  shadow columns (``length()`` less the ``length()`` after ``replace()``, divided by the needle's
  ``length()``: non-overlapping occurrences of Python's lower-cased needle). The presence test is
  ``LIKE '%needle%'`` with ``%``, ``_`` and ``\\`` escaped, so PostgreSQL may answer it from the
  ``pg_trgm`` GIN indexes (``pg_schema/0009``) instead of reading every row; the planner decides,
  and either way the same rows match;
- **ranked**: PostgreSQL full-text search in place of FTS5/BM25, with the same any-word semantics:
  each distinct ``\\w+`` word of the lower-cased query is a ``plainto_tsquery('simple', ...)``,
  OR-ed together, over title, body, scope and kind (the ``memory_fts`` GIN index); the score is
  ``ts_rank``. A query with no word at all is every entry, by importance, as on SQLite.

Both orders are the contract's: summaries last, then score, importance, id (``COLLATE "C"``).
"""

from __future__ import annotations

import re
from typing import Any

from store.memory._entry import ENTRY_COLUMNS, MemoryEntry, entry_from_values
from store.memory._search import SUMMARIES_LAST, MemoryFilter

__all__ = ["pg_search"]

_WORD = re.compile(r"\w+", re.UNICODE)
_LC_COLUMNS = ("m.lc_title", "m.lc_body", "m.lc_scope", "m.lc_kind")
_DOCUMENT = "to_tsvector('simple', m.title || ' ' || m.body_md || ' ' || m.scope || ' ' || m.kind)"
"""The expression of the ``memory_fts`` index; the query must repeat it exactly to use the index."""


def _where(filters: MemoryFilter) -> tuple[list[str], dict[str, Any]]:
    where, params = filters.where()
    # SQLite reads a bare 0 as false and LIMIT -1 as no limit; PostgreSQL wants FALSE and NULL.
    where = ["FALSE" if clause.endswith(" IN ()") or clause == "0" else clause for clause in where]
    params["limit"] = filters.limit if filters.limit > 0 else None
    return where, params


def _like_pattern(needle: str) -> str:
    escaped = needle.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def pg_search(conn: Any, text: str, filters: MemoryFilter, *, ranked: bool = False) -> list[MemoryEntry]:
    """The entries ``memory.query`` answers for ``text`` (not yet lower-cased) and ``filters``."""
    where, params = _where(filters)
    words = list(dict.fromkeys(_WORD.findall(text.lower()))) if ranked else []
    needle = "" if ranked else text.lower()
    if ranked and words:
        query = " || ".join(f"plainto_tsquery('simple', CAST(:w{i} AS TEXT))" for i in range(len(words)))
        params.update({f"w{i}": word for i, word in enumerate(words)})
        score = f"ts_rank({_DOCUMENT}, ({query}))"
        where.append(f"{_DOCUMENT} @@ ({query})")
    elif needle:
        params["q"] = needle
        params["pattern"] = _like_pattern(needle)
        score = " + ".join(
            f"((length({col}) - length(replace({col}, CAST(:q AS TEXT), ''))) / length(CAST(:q AS TEXT)))"
            for col in _LC_COLUMNS
        )
        where.append("(" + " OR ".join(f"{col} LIKE CAST(:pattern AS TEXT)" for col in _LC_COLUMNS) + ")")
    else:
        score = "m.importance"
    sql = (
        f"SELECT {ENTRY_COLUMNS}, {score} AS score FROM memory_entries AS m"
        f" WHERE {' AND '.join(where) or 'TRUE'}"
        f" ORDER BY {SUMMARIES_LAST}, score DESC, m.importance DESC, m.id ASC LIMIT :limit"
    )
    return [entry_from_values(row, row[-1]) for row in conn.execute(sql, params).fetchall()]
