"""Keeping the ranked search's index (``0012_memory_rank.sql``) in step with the entries' text.

:func:`index_entries` is called, in the caller's write transaction, by every write that changes an
entry's title, body, scope or kind (``insert_entry``, a replacement, ``mark_stale``, a revision
edit, a resynthesis), so the index commits with the entry and its event. It reads the entries'
current shadow columns and, for each one whose terms changed:

- takes its old postings out of the lists (their keys are recomputed from its stored terms) and
  writes its new length and terms (``memory_rank_docs``);
- moves each term's ``df`` (and the entry count, the row of the empty term) by the difference,
  atomically (``df = df + delta``), terms in code-point order with the empty term first, so that
  concurrent writers on PostgreSQL take these rows' locks in one order;
- adds a posting for each of its terms whose impact is above the term's ``bound`` (below it the
  list need not hold it: the bound already covers it); a list that grows past ``2 * KEEP``
  postings keeps its best :data:`KEEP` and raises its ``bound`` to the best it dropped, and a
  batch (``record_many`` within :func:`batched_index`, the backlog) that brings a term more than
  :data:`KEEP` new postings adds only its best :data:`KEEP`, raising the bound the same way.

Every list therefore holds every entry of its term whose impact is above the term's ``bound``
(:mod:`store.memory._ranked` relies on exactly that), and nothing else of consequence.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from store.memory._rank import entry_terms, impact

__all__ = ["KEEP", "batched_index", "drain_backlog", "index_entries"]

KEEP = 1_024
"""Postings a long list keeps when it is trimmed (it is trimmed once it passes twice this)."""

_CHUNK = 500
"""IDs or terms bound per ``IN (...)`` list."""

_ALL = ""
"""The term whose ``df`` counts the entries."""


_BATCH: ContextVar[set[str] | None] = ContextVar("memory_rank_batch", default=None)


@contextmanager
def batched_index(conn: Any) -> Iterator[None]:
    """Within this block (one write transaction), :func:`index_entries` only notes the IDs; they
    are indexed together when it ends, in the same transaction: a bulk write then moves each
    term's ``df`` once and adds only what can stay of each list, instead of once an entry."""
    pending: set[str] = set()
    token = _BATCH.set(pending)
    try:
        yield
    finally:
        _BATCH.reset(token)
    index_entries(conn, pending)


def index_entries(conn: Any, ids: Iterable[str]) -> None:
    """Bring the index of the entries ``ids`` in step with their stored text (see the module)."""
    pending = _BATCH.get()
    if pending is not None:
        pending.update(ids)
        return
    wanted = sorted(set(ids))
    if not wanted:
        return
    fields = {row[0]: row[1:] for row in _select_in(conn, _FIELDS, wanted)}
    old = {row[0]: (row[1], row[2], json.loads(row[3])) for row in _select_in(conn, _DOCS, wanted)}
    df: Counter[str] = Counter()
    removed: list[tuple[str, float, int]] = []
    added: list[tuple[str, int, int, str]] = []  # (term, tf, length, id): the doc is known later
    for entry_id in wanted:
        before = old.get(entry_id)
        counts, length = entry_terms(fields[entry_id]) if entry_id in fields else (Counter(), 0)
        if before is not None and before[1] == length and before[2] == dict(counts):
            continue
        if before is not None:
            doc, old_length, old_counts = before
            df.subtract(old_counts.keys())
            removed.extend((term, impact(tf, old_length), doc) for term, tf in old_counts.items())
        if entry_id not in fields:  # no longer stored (the store deletes none; tests may)
            df[_ALL] -= before is not None
            conn.execute("DELETE FROM memory_rank_docs WHERE id = ?", (entry_id,))
            continue
        df[_ALL] += before is None
        df.update(counts.keys())
        added.extend((term, tf, length, entry_id) for term, tf in counts.items())
        _write_doc(conn, entry_id, length, counts, None if before is None else before[0])
    if removed:
        conn.executemany(
            "DELETE FROM memory_rank_postings WHERE term = ? AND impact = ? AND doc = ?", removed
        )
    _add_postings(conn, df, added)


def drain_backlog(conn: Any, batch: int = 2_000) -> int:
    """Index up to ``batch`` entries of ``memory_rank_backlog`` (entries older than the index);
    how many were left before this call took its batch (0: the index is complete)."""
    ids = [row[0] for row in conn.execute("SELECT id FROM memory_rank_backlog ORDER BY id LIMIT ?", (batch,))]
    if ids:
        index_entries(conn, ids)
        for start in range(0, len(ids), _CHUNK):
            chunk = ids[start : start + _CHUNK]
            conn.execute(f"DELETE FROM memory_rank_backlog WHERE id IN ({_marks(len(chunk))})", chunk)
    return len(ids)


_FIELDS = "SELECT id, lc_title, lc_body, lc_scope, lc_kind FROM memory_entries WHERE id IN ({})"
_DOCS = "SELECT id, doc, length, terms FROM memory_rank_docs WHERE id IN ({})"


def _select_in(conn: Any, sql: str, values: list[str]) -> list[Any]:
    rows: list[Any] = []
    for start in range(0, len(values), _CHUNK):
        chunk = values[start : start + _CHUNK]
        rows.extend(conn.execute(sql.format(_marks(len(chunk))), chunk).fetchall())
    return rows


def _marks(count: int) -> str:
    return ", ".join("?" * count)


def _write_doc(conn: Any, entry_id: str, length: int, counts: Counter[str], doc: int | None) -> None:
    terms = json.dumps(dict(sorted(counts.items())), ensure_ascii=False, separators=(",", ":"))
    if doc is None:
        conn.execute(
            "INSERT INTO memory_rank_docs (id, length, terms) VALUES (?, ?, ?)", (entry_id, length, terms)
        )
    else:
        conn.execute("UPDATE memory_rank_docs SET length = ?, terms = ? WHERE doc = ?", (length, terms, doc))


def _add_postings(conn: Any, df: Counter[str], added: list[tuple[str, int, int, str]]) -> None:
    """Move the ``df`` of every touched term, add the postings above each term's bound, and trim
    the lists that grew too long."""
    touched = sorted({*df, *(term for term, *_ in added)})
    if not touched:
        return
    known = {row[0]: (float(row[1]), int(row[2])) for row in _select_in(conn, _TERMS, touched)}
    new_ids = sorted({entry_id for *_, entry_id in added})
    docs = {row[0]: int(row[1]) for row in _select_in(conn, _DOC_NUMBERS, new_ids)}
    by_term: dict[str, list[tuple[str, float, int]]] = {}
    weights: dict[tuple[int, int], float] = {}
    for term, tf, length, entry_id in added:
        weight = weights.get((tf, length))
        if weight is None:
            weight = weights[tf, length] = impact(tf, length)
        if weight > known.get(term, _UNKNOWN)[0]:
            by_term.setdefault(term, []).append((term, weight, docs[entry_id]))
    rows: list[tuple[str, float, int]] = []
    raised: list[tuple[float, float, str]] = []
    grown: Counter[str] = Counter()
    for term in sorted(by_term):
        postings = by_term[term]
        postings.sort(key=lambda row: (-row[1], row[2]))  # in index order: one walk along it
        if len(postings) > KEEP:  # a bulk write: only the best can stay, so only they go in
            raised.append((postings[KEEP][1], postings[KEEP][1], term))
            del postings[KEEP:]
        rows.extend(postings)
        grown[term] = len(postings)
    conn.executemany(
        "INSERT INTO memory_rank_terms (term, df, postings) VALUES (?, ?, ?) ON CONFLICT (term) DO UPDATE"
        " SET df = memory_rank_terms.df + excluded.df,"
        " postings = memory_rank_terms.postings + excluded.postings",
        [(term, df[term], grown[term]) for term in touched if df[term] or grown[term]],
    )
    conn.executemany(_RAISE, raised)
    conn.executemany("INSERT INTO memory_rank_postings (term, impact, doc) VALUES (?, ?, ?)", rows)
    for term in touched:
        if known.get(term, (0.0, 0))[1] + grown[term] > 2 * KEEP:
            _trim(conn, term)


_UNKNOWN = (0.0, 0)
"""The bound and postings count of a term not yet in ``memory_rank_terms``."""
_RAISE = "UPDATE memory_rank_terms SET bound = CASE WHEN bound > ? THEN bound ELSE ? END WHERE term = ?"
"""Raise a term's bound to an impact dropped from its list (never lower it)."""
_DOC_NUMBERS = "SELECT id, doc FROM memory_rank_docs WHERE id IN ({})"
_TERMS = "SELECT term, bound, postings FROM memory_rank_terms WHERE term IN ({})"


def _trim(conn: Any, term: str) -> None:
    """Keep the best :data:`KEEP` postings of ``term``'s list; the bound rises to the best dropped."""
    cut = conn.execute(
        "SELECT impact, doc FROM memory_rank_postings WHERE term = ?"
        " ORDER BY impact DESC, doc LIMIT 1 OFFSET ?",
        (term, KEEP),
    ).fetchone()
    if cut is None:  # entries rewritten since: the list is shorter than its count said
        kept = conn.execute("SELECT count(*) FROM memory_rank_postings WHERE term = ?", (term,)).fetchone()[0]
        conn.execute("UPDATE memory_rank_terms SET postings = ? WHERE term = ?", (kept, term))
        return
    weight, doc = float(cut[0]), int(cut[1])
    conn.execute(
        "DELETE FROM memory_rank_postings WHERE term = ? AND (impact < ? OR (impact = ? AND doc >= ?))",
        (term, weight, weight, doc),
    )
    conn.execute("UPDATE memory_rank_terms SET postings = ? WHERE term = ?", (KEEP, term))
    conn.execute(_RAISE, (weight, weight, term))
