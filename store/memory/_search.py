"""How memory is searched: the SQL behind ``memory.query`` and ``memory.summarize``.

Pure functions that build a statement and its parameters; :class:`store.memory._store.MemoryStore` runs
them. The substring score is the seed's contract: non-overlapping occurrences of the whole
lower-cased, untrimmed query in title, body, scope and kind, summed, counted with Python's
``str.count`` (:func:`substring_score`) over lower-cased copies written with Python's ``lower()``.
``ranked`` matching is :mod:`store.memory._ranked`'s (its own impact-ordered index). Both rank
``summary`` entries after all others (:data:`SUMMARIES_LAST`, the one deliberate change to the seed's order).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from store.memory._entry import ENTRY_COLUMNS, MemoryEntry

__all__ = [
    "SCORE_FUNCTION",
    "TRIGRAM",
    "MemoryFilter",
    "candidate_rowids",
    "candidates_probe",
    "reach_probe",
    "render_summary",
    "substring_keys",
    "substring_score",
    "summary_query",
    "trigram_match",
    "trigram_phrase",
]

_LC_COLUMNS = ("m.lc_title", "m.lc_body", "m.lc_scope", "m.lc_kind")

Statement = tuple[str, dict[str, Any]]

SCORE_FUNCTION = "memory_substring_score"
"""The SQL function :func:`substring_keys` scores with: :func:`substring_score`, which
:func:`store.memory._query.search` registers on the connection before it runs the statement."""

TRIGRAM = 3
"""The shortest needle the trigram index can find: the length of one trigram."""

IS_SUMMARY = "(m.lc_kind = 'summary')"
SUMMARIES_LAST = f"{IS_SUMMARY} ASC"
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

    def passes(self, scope: str, kind: str, status: str) -> bool:
        """Whether an entry with these columns passes the filters: :meth:`where` in Python, for
        rows read by key, where a condition in SQL could make the planner read by scope."""
        if self.scope is not None and scope != self.scope:
            return False
        if self.scope is None and self.allowed_scopes is not None and scope not in self.allowed_scopes:
            return False
        if self.kind is not None and kind != self.kind:
            return False
        return not (self.exclude_stale and status == "stale")


def trigram_phrase(needle: str) -> str | None:
    """The FTS5 ``MATCH`` string of ``needle`` as one phrase of its consecutive trigrams, which
    finds exactly the rows whose columns contain it; ``None`` when the index cannot answer for it
    and the search scans instead.

    The needle in double quotes, embedded quotes doubled: inside it FTS5 reads no other syntax.
    It cannot answer for a needle shorter than three characters (no trigram at all), nor one
    holding NUL (FTS5 ends the phrase there; stored text holds none, so the scan finds nothing
    either). A few characters it reads alike (U+FFFE and U+FFFF as U+FFFD) only widen the
    candidates, which the exact count then narrows.
    """
    if len(needle) < TRIGRAM or "\x00" in needle:
        return None
    return '"' + needle.replace('"', '""') + '"'


def trigram_match(needle: str) -> str | None:
    """A cheaper ``MATCH`` string than :func:`trigram_phrase` for the same needle: the rows that
    hold every trigram of a cover of it (the trigrams at 0, 3, 6, ... and the last one), each a
    quoted string, AND-ed; ``None`` where the phrase is.

    A row holding the needle holds each of its trigrams, so these rows are a superset of the
    phrase's. Without positions to load and line up, they cost a third to a tenth of the phrase
    for a long needle with common trigrams (an identifier such as ``dopet.list._dreas``), and
    for a word the two sets are nearly the same; across words, where trigrams fall together by
    chance, the superset can be far larger (``cache index``: 27 rows hold the phrase, 4,643 the
    cover), so the search asks the phrase next when the cover finds many.
    """
    if trigram_phrase(needle) is None:
        return None
    starts = [*range(0, len(needle) - TRIGRAM + 1, TRIGRAM), len(needle) - TRIGRAM]
    cover = dict.fromkeys(needle[start : start + TRIGRAM] for start in starts)
    return " AND ".join('"' + trigram.replace('"', '""') + '"' for trigram in cover)


def substring_score(title: str, body: str, scope: str, kind: str, needle: str) -> int:
    """The seed's score of one entry: non-overlapping occurrences of ``needle`` in each
    lower-cased field (``str.count``), summed.

    Counted in Python rather than with SQLite's ``replace()`` and ``length()`` (the same number:
    both count leftmost, non-overlapping matches, and a UTF-8 needle matches only on character
    boundaries), because ``str.count`` reads each field once with a fast search where
    ``replace()`` builds a new string and ``length()`` walks both: a needle in every entry is
    scored in about half the time.
    """
    return title.count(needle) + body.count(needle) + scope.count(needle) + kind.count(needle)


def substring_keys(
    needle: str, filters: MemoryFilter, *, indexed: bool, candidates: Sequence[int] | None = None
) -> Statement:
    """The seed's scorer: ``(rowid, score)`` of every match in the contract's order, up to the limit.

    The score is counted on the lower-cased shadow columns (:func:`substring_score`); an empty
    needle scores every entry by its importance. ``indexed`` (only for a needle with a
    :func:`trigram_phrase`) reads the candidates from the trigram index instead of every row, and
    ``candidates`` instead reads the rows of those rowids (the index's candidates, already read):
    either is a superset of the matches, and the same presence test and count decide, so the
    answer is the same row for row.
    """
    where, params = filters.where()
    source = "memory_entries AS m"
    if needle == "":
        score_sql = "m.importance"
    else:
        # Non-overlapping occurrences of the needle in each lower-cased field, summed: Python's
        # str.count, the contract's own model, registered by the caller (SCORE_FUNCTION).
        score_sql = f"{SCORE_FUNCTION}({', '.join(_LC_COLUMNS)}, :q)"
        # Cheap presence test first, so only matching rows are scored.
        where.append("(" + " OR ".join(f"instr({col}, :q) > 0" for col in _LC_COLUMNS) + ")")
        params["q"] = needle
        # CROSS JOIN keeps the candidates as the outer loop: each one is one rowid lookup.
        if candidates is not None:
            source = "json_each(:ids) AS c CROSS JOIN memory_entries AS m ON m.rowid = c.value"
            params["ids"] = "[" + ",".join(str(rowid) for rowid in candidates) + "]"
        elif indexed:
            source = "memory_trigram CROSS JOIN memory_entries AS m ON m.rowid = memory_trigram.rowid"
            where.append("memory_trigram MATCH :match")
            params["match"] = trigram_phrase(needle)
    sql = (
        f"SELECT m.rowid, {score_sql} AS score FROM {source}"
        f" WHERE {' AND '.join(where) or '1'}"
        f" ORDER BY {SUMMARIES_LAST}, score DESC, m.importance DESC, m.id ASC LIMIT :limit"
    )
    return sql, params


def candidates_probe(match: str, cap: int) -> Statement:
    """How many rows the trigram index holds for ``match``, counting no further than ``cap``."""
    sql = "SELECT count(*) FROM (SELECT 1 FROM memory_trigram WHERE memory_trigram MATCH :match LIMIT :cap)"
    return sql, {"match": match, "cap": cap}


def candidate_rowids(match: str, cap: int) -> Statement:
    """The rowids the trigram index holds for ``match``, no more than ``cap`` of them."""
    return "SELECT rowid FROM memory_trigram WHERE memory_trigram MATCH :match LIMIT :cap", {
        "match": match,
        "cap": cap,
    }


def reach_probe(filters: MemoryFilter, cap: int) -> Statement | None:
    """How many rows a scan reaches through the scope index (counting no further than ``cap``),
    or ``None`` when no scope narrows it and a scan reads every row."""
    params: dict[str, Any] = {"cap": cap}
    if filters.scope is not None:
        where = "m.scope = :scope"
        params["scope"] = filters.scope
    elif filters.allowed_scopes is not None:
        where = _in_clause("m.scope", "allowed", sorted(filters.allowed_scopes), params)
    else:
        return None
    if filters.kind is not None:
        where += " AND m.kind = :kind"
        params["kind"] = filters.kind
    return (
        f"SELECT count(*) FROM (SELECT 1 FROM memory_entries AS m WHERE {where} LIMIT :cap) AS reach",
        params,
    )


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
