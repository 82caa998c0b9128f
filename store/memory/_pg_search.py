"""``memory.query`` on PostgreSQL: the same contract as :mod:`store.memory._query`, in its dialect.

- **substring** (the seed's contract): the same score, counted the same way on the lower-cased
  shadow columns (``length()`` less the ``length()`` after ``replace()``, divided by the needle's
  ``length()``: non-overlapping occurrences of Python's lower-cased needle). The presence test is
  ``LIKE '%needle%'`` with ``%``, ``_`` and ``\\`` escaped, so PostgreSQL may answer it from the
  ``pg_trgm`` GIN indexes (``pg_schema/0009``) instead of reading every row; the planner decides,
  and either way the same rows match;
- **ranked** is not here: both backends run :mod:`store.memory._ranked` on the same tables
  (``0012_memory_rank.sql``), so they rank alike, bit for bit.

Both orders are the contract's: summaries last, then score, importance, id (``COLLATE "C"``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from store.memory._entry import ENTRY_COLUMNS
from store.memory._search import SUMMARIES_LAST, MemoryFilter

__all__ = ["pg_search"]

_T = TypeVar("_T")

_LC_COLUMNS = ("m.lc_title", "m.lc_body", "m.lc_scope", "m.lc_kind")


def _where(filters: MemoryFilter) -> tuple[list[str], dict[str, Any]]:
    where, params = filters.where()
    # SQLite reads a bare 0 as false and LIMIT -1 as no limit; PostgreSQL wants FALSE and NULL.
    where = ["FALSE" if clause.endswith(" IN ()") or clause == "0" else clause for clause in where]
    params["limit"] = filters.limit if filters.limit > 0 else None
    return where, params


def _like_pattern(needle: str) -> str:
    escaped = needle.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def pg_search(
    conn: Any, text: str, filters: MemoryFilter, build: Callable[[Sequence[Any], object], _T]
) -> list[_T]:
    """The substring entries ``memory.query`` answers for ``text`` (not yet lower-cased) and
    ``filters``, each built from its row and score by ``build``."""
    where, params = _where(filters)
    needle = text.lower()
    if needle:
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
    return [build(row, row[-1]) for row in conn.execute(sql, params).fetchall()]
