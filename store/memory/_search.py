"""How memory is searched: the SQL behind ``memory.query`` and ``memory.summarize``.

Pure functions that build a statement and its parameters; :class:`store.memory._store.MemoryStore` runs
them. The substring score is the seed's contract: non-overlapping occurrences of the whole
lower-cased, untrimmed query in title, body, scope and kind, summed, counted with SQLite's
``replace()``/``length()`` over lower-cased copies written with Python's Unicode ``lower()``.
``ranked`` matching uses the FTS5 index with BM25 and any-word semantics. Both rank ``summary``
entries after all others (:data:`SUMMARIES_LAST`, the one deliberate change to the seed's order).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from store.memory._entry import ENTRY_COLUMNS, MemoryEntry

__all__ = ["MemoryFilter", "ranked_query", "render_summary", "substring_query", "summary_query"]

_WORD = re.compile(r"\w+", re.UNICODE)
_LC_COLUMNS = ("m.lc_title", "m.lc_body", "m.lc_scope", "m.lc_kind")

Statement = tuple[str, dict[str, Any]]

SUMMARIES_LAST = "(m.lc_kind = 'summary') ASC"
"""The first sort key of ``memory.query``: ``summary`` entries (any case) rank after every other
entry, so an oracle summary that repeats a decision's words never outranks the decision. Among
the others, and among summaries, the contract's order holds (score, importance, id)."""


@dataclass(frozen=True)
class MemoryFilter:
    """Validated ``memory.query`` filters."""

    scope: str | None
    kind: str | None
    allowed_scopes: frozenset[str] | None
    exclude_stale: bool
    limit: int

    def where(self) -> tuple[list[str], dict[str, Any]]:
        """The WHERE conditions and their parameters (with ``:limit``; 0 or less means all)."""
        where: list[str] = []
        params: dict[str, Any] = {}
        if self.scope is not None:
            where.append("m.scope = :scope")
            params["scope"] = self.scope
        elif self.allowed_scopes is not None:
            where.append(_in_clause("m.scope", "allowed", sorted(self.allowed_scopes), params))
        if self.kind is not None:
            where.append("m.kind = :kind")
            params["kind"] = self.kind
        if self.exclude_stale:
            where.append("m.status != 'stale'")
        params["limit"] = self.limit if self.limit > 0 else -1
        return where, params


def substring_query(needle: str, filters: MemoryFilter) -> Statement:
    """The seed's scorer; an empty needle scores every entry by its importance."""
    where, params = filters.where()
    if needle == "":
        score_sql = "m.importance"
    else:
        # Non-overlapping occurrences of the needle in each lower-cased field, summed.
        score_sql = " + ".join(
            f"((length({col}) - length(replace({col}, :q, ''))) / length(:q))" for col in _LC_COLUMNS
        )
        # Cheap presence test first, so only matching rows are scored.
        where.append("(" + " OR ".join(f"instr({col}, :q) > 0" for col in _LC_COLUMNS) + ")")
        params["q"] = needle
    sql = (
        f"SELECT {ENTRY_COLUMNS}, {score_sql} AS score FROM memory_entries AS m"
        f" WHERE {' AND '.join(where) or '1'}"
        f" ORDER BY {SUMMARIES_LAST}, score DESC, m.importance DESC, m.id ASC LIMIT :limit"
    )
    return sql, params


def ranked_query(text: str, filters: MemoryFilter) -> Statement:
    """BM25 over the full-text index, any word matching; no words at all means every entry."""
    words = _WORD.findall(text.lower())
    if not words:
        return substring_query("", filters)
    where, params = filters.where()
    # Any-word semantics: each distinct word is a quoted FTS5 string, OR-ed together.
    params["fts"] = " OR ".join('"' + word.replace('"', '""') + '"' for word in dict.fromkeys(words))
    sql = (
        f"SELECT {ENTRY_COLUMNS}, -bm25(memory_fts) AS score FROM memory_fts"
        " JOIN memory_entries AS m ON m.rowid = memory_fts.rowid"
        f" WHERE {' AND '.join([*where, 'memory_fts MATCH :fts'])}"
        f" ORDER BY {SUMMARIES_LAST}, bm25(memory_fts) ASC, m.importance DESC, m.id ASC LIMIT :limit"
    )
    return sql, params


def summary_query(filters: dict[str, str | None], allowed_scopes: frozenset[str] | None) -> Statement:
    """Every non-stale entry whose scope equals every supplied filter, by importance then id."""
    where = ["status != 'stale'"]
    params: dict[str, Any] = {}
    for name, value in filters.items():
        if value is not None:
            where.append(f"scope = :{name}")
            params[name] = value
    if allowed_scopes is not None:
        where.append(_in_clause("m.scope", "allowed", sorted(allowed_scopes), params))
    sql = (
        f"SELECT {ENTRY_COLUMNS} FROM memory_entries AS m WHERE {' AND '.join(where)}"
        " ORDER BY importance DESC, id ASC"
    )
    return sql, params


def render_summary(label: str, entries: list[MemoryEntry]) -> str:
    """Deterministic Markdown: a heading, then one item per entry with kind, title and body."""
    lines = [f"## Memory summary: {label}", ""]
    if not entries:
        lines.append("_No entries._")
    for entry in entries:
        body = entry.body_md.strip().replace("\n", "\n  ")
        lines.append(f"- **{entry.kind}**: {entry.title}\n  {body}")
    return "\n".join(lines) + "\n"


def _in_clause(column: str, prefix: str, values: list[str], params: dict[str, Any]) -> str:
    """``column IN (:prefix0, ...)`` with each value bound in ``params``."""
    names = []
    for index, value in enumerate(values):
        params[f"{prefix}{index}"] = value
        names.append(f":{prefix}{index}")
    return f"{column} IN ({', '.join(names)})" if names else "0"
