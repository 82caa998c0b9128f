"""The ranked search's index of a bulk-loaded project, built in one pass (the benchmark's loader).

The store indexes an entry as it is written, or drains a backlog of older entries a batch at a
time (:func:`store.memory._rank_index.drain_backlog`). Each batch reads and rewrites every block
it touches, and a batch of 10,000 realistic entries touches most of the blocks of the common
terms' lists: indexing 1,000,000 bulk-loaded entries that way rewrote the index about once a
batch, some 50 minutes of the 1,000,000-entry benchmark's load on this machine. Here each term's
list is gathered in memory from every entry, sorted once, and written once, in blocks of
:data:`~store.memory._rank_blocks.SIZE` as :func:`~store.memory._rank_blocks.convert` packs a
list (:func:`~store.memory._rank_blocks.cut`). The entries are numbered, their terms stored and
each term's ``df`` counted as the drain does (entries in ID order, the same
:func:`~store.memory._rank.entry_terms`, :func:`~store.memory._rank.impact` and
:func:`~store.memory._rank_index.stored_terms`), so the tables hold what the drain leaves, the
lists only cut at other postings; ``tests/store/memory/test_memory_bulk_load.py`` checks both,
list by list and query by query.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Sequence
from functools import partial
from typing import Any

import numpy as np

from store.db import Database
from store.memory._rank import entry_terms, impact
from store.memory._rank_blocks import cut
from store.memory._rank_index import stored_terms

__all__ = ["build_ranked_index"]

_ENTRIES = (
    "SELECT id, lc_title, lc_body, lc_scope, lc_kind FROM memory_entries WHERE id > ? ORDER BY id LIMIT ?"
)
_DOC = "INSERT INTO memory_rank_docs (doc, id, length, terms) VALUES (?, ?, ?, ?)"
_DF = (
    "INSERT INTO memory_rank_terms (term, df) VALUES (?, ?)"
    " ON CONFLICT (term) DO UPDATE SET df = memory_rank_terms.df + excluded.df"
)
_BLOCK = "INSERT INTO memory_rank_blocks (term, impact, doc, data) VALUES (?, ?, ?, ?)"

Lists = dict[str, tuple["array[float]", "array[int]"]]


def build_ranked_index(db: Database, chunk: int = 20_000, blocks_per_write: int = 50_000) -> int:
    """Index every entry of ``db``, whose ranked index must be empty; how many entries it indexed.

    Entries are read and their ``memory_rank_docs`` rows written ``chunk`` at a time; the blocks
    are written ``blocks_per_write`` to a transaction, the backlog emptied last, so a ranked query
    reads the entries' text directly (the store's own fallback) until the index is whole.
    """
    indexed = "SELECT count(*) FROM memory_rank_docs"
    if db.read(lambda conn: conn.execute(indexed).fetchone()[0]):
        raise ValueError("the ranked index is not empty: build it only over a bulk load")
    lists: Lists = {}
    total = _number_entries(db, lists, chunk)
    db.write(
        lambda conn: conn.executemany(
            _DF, [("", total), *((term, len(docs)) for term, (_, docs) in lists.items())]
        )
    )
    batch: list[tuple[str, float, int, bytes]] = []
    for block in _blocks(lists):
        batch.append(block)
        if len(batch) >= blocks_per_write:
            db.write(partial(_many, _BLOCK, batch))
            batch = []
    db.write(partial(_many, _BLOCK, batch))
    db.write(lambda conn: conn.execute("DELETE FROM memory_rank_backlog"))
    return total


def _number_entries(db: Database, lists: Lists, chunk: int) -> int:
    """Write every entry's ``memory_rank_docs`` row, numbered in ID order from 1 (as an empty
    table numbers them), and gather each term's postings into ``lists``; the entries' count."""
    weights: dict[tuple[int, int], float] = {}
    doc, after = 0, ""
    while rows := db.read(partial(_fetch, _ENTRIES, (after, chunk))):
        docs: list[tuple[int, str, int, str]] = []
        for entry_id, *fields in rows:
            counts, length = entry_terms(fields)
            doc += 1
            docs.append((doc, entry_id, length, stored_terms(counts)))
            for term, tf in counts.items():
                weight = weights.get((tf, length))
                if weight is None:
                    weight = weights[tf, length] = impact(tf, length)
                postings = lists.get(term)
                if postings is None:
                    postings = lists[term] = (array("d"), array("q"))
                postings[0].append(weight)
                postings[1].append(doc)
        db.write(partial(_many, _DOC, docs))
        after = rows[-1][0]
    return doc


def _blocks(lists: Lists) -> Iterator[tuple[str, float, int, bytes]]:
    """Each term's list in the lists' order (best impact first, then by entry number), cut into
    blocks keyed by their first postings (:func:`~store.memory._rank_blocks.cut`): ``(term,
    impact, doc, data)`` rows. A term's postings are freed once its blocks are made."""
    for term in sorted(lists):
        impacts_in, docs_in = lists.pop(term)
        impacts = np.frombuffer(impacts_in, dtype=np.float64)
        docs = np.frombuffer(docs_in, dtype=np.int64)
        order = np.lexsort((docs, -impacts))
        yield from cut(term, array("d", impacts[order].tobytes()), array("q", docs[order].tobytes()))


def _many(sql: str, rows: Sequence[Sequence[Any]], conn: Any) -> None:
    conn.executemany(sql, rows)


def _fetch(sql: str, params: Sequence[Any], conn: Any) -> list[Any]:
    return list(conn.execute(sql, params).fetchall())
