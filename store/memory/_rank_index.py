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
- adds a posting for each of its terms to that term's list.

The lists are stored in packed blocks (:mod:`._rank_blocks`, migration 0014): a term's removals
and additions of one call are applied together, each block touched read and written once.

Every list therefore holds exactly one posting, its current impact, for every entry holding its
term (:mod:`store.memory._ranked` relies on exactly that). Lists are never cut (migration 0013):
a cut list could not settle a query whose filters passed few of its postings, nor one whose
terms tied at the cut, and those queries scored every match instead. A batch (``record_many``
within :func:`batched_index`, the backlog) moves each term's ``df`` once.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from store.memory._rank import entry_terms, impact
from store.memory._rank_blocks import apply as apply_blocks

__all__ = ["RANK_PENDING", "batched_index", "drain_backlog", "index_entries", "stored_terms"]

RANK_PENDING = "SELECT 1 FROM memory_rank_backlog UNION ALL SELECT 1 FROM memory_rank_convert LIMIT 1"
"""A row while the index is incomplete: entries wait in the backlog, or lists to be packed."""

_CHUNK = 500
"""IDs or terms bound per ``IN (...)`` list."""

_ALL = ""
"""The term whose ``df`` counts the entries."""


_BATCH: ContextVar[set[str] | None] = ContextVar("memory_rank_batch", default=None)


@contextmanager
def batched_index(conn: Any) -> Iterator[None]:
    """Within this block (one write transaction), :func:`index_entries` only notes the IDs; they
    are indexed together when it ends, in the same transaction: a bulk write then moves each
    term's ``df`` once, instead of once an entry."""
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
    _add_postings(conn, df, removed, added)


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


def stored_terms(counts: Counter[str]) -> str:
    """An entry's term frequencies as ``memory_rank_docs.terms`` holds them: a JSON object in term
    order, compact, unescaped (the ranked search finds a term's count in this text by its key)."""
    return json.dumps(dict(sorted(counts.items())), ensure_ascii=False, separators=(",", ":"))


def _write_doc(conn: Any, entry_id: str, length: int, counts: Counter[str], doc: int | None) -> None:
    terms = stored_terms(counts)
    if doc is None:
        conn.execute(
            "INSERT INTO memory_rank_docs (id, length, terms) VALUES (?, ?, ?)", (entry_id, length, terms)
        )
    else:
        conn.execute("UPDATE memory_rank_docs SET length = ?, terms = ? WHERE doc = ?", (length, terms, doc))


def _add_postings(
    conn: Any, df: Counter[str], removed: list[tuple[str, float, int]], added: list[tuple[str, int, int, str]]
) -> None:
    """Move the ``df`` of every touched term, then take out the old postings and add the new ones,
    a term's blocks at a time, in term order."""
    touched = sorted({*df, *(term for term, *_ in added), *(term for term, *_ in removed)})
    if not touched:
        return
    new_ids = sorted({entry_id for *_, entry_id in added})
    docs = {row[0]: int(row[1]) for row in _select_in(conn, _DOC_NUMBERS, new_ids)}
    weights: dict[tuple[int, int], float] = {}
    changes: dict[str, list[tuple[float, int, bool]]] = {}
    for term, value, doc in removed:
        changes.setdefault(term, []).append((value, doc, False))
    for term, tf, length, entry_id in added:
        weight = weights.get((tf, length))
        if weight is None:
            weight = weights[tf, length] = impact(tf, length)
        changes.setdefault(term, []).append((weight, docs[entry_id], True))
    conn.executemany(
        "INSERT INTO memory_rank_terms (term, df) VALUES (?, ?) ON CONFLICT (term) DO UPDATE"
        " SET df = memory_rank_terms.df + excluded.df",
        [(term, df[term]) for term in touched if df[term]],
    )
    for term in touched:
        if term in changes:
            apply_blocks(conn, term, changes[term])


_DOC_NUMBERS = "SELECT id, doc FROM memory_rank_docs WHERE id IN ({})"
