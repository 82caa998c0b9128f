"""Helpers shared by the memory search tests."""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from typing import Any

from store import Store
from store.memory import _rank_blocks
from store.memory._rank import entry_terms, impact, reference_ranking

_TABLES = (
    "memory_revisions",
    "memory_provenance_edges",
    "memory_entries",
    "memory_rank_postings",
    "memory_rank_blocks",
    "memory_rank_terms",
    "memory_rank_docs",
)


def wipe_memory(store: Store) -> None:
    """Delete every entry and the ranked index with it (the delete triggers keep the trigram
    index in step; the ranked index, which the store writes itself, is emptied alongside)."""

    def wipe(conn: sqlite3.Connection) -> None:
        for table in _TABLES:
            conn.execute(f"DELETE FROM {table}")

    store.db.write(wipe)


def check_rank_index(store: Store) -> None:
    """The invariants the walk relies on: df and N exact; every entry holding a term in its
    list, at its current impact, and nothing else in the lists; what places and filters an entry
    equal to its columns."""

    def read(conn: sqlite3.Connection) -> tuple[Any, ...]:
        entries = conn.execute(
            "SELECT id, lc_title, lc_body, lc_scope, lc_kind FROM memory_entries"
        ).fetchall()
        docs = {
            row[0]: (row[1], row[2], json.loads(row[3]))
            for row in conn.execute("SELECT id, doc, length, terms FROM memory_rank_docs")
        }
        terms = {row[0]: row[1] for row in conn.execute("SELECT term, df FROM memory_rank_terms")}
        blocks = conn.execute(
            "SELECT term, impact, doc, data FROM memory_rank_blocks ORDER BY term, impact DESC, doc"
        ).fetchall()
        assert conn.execute("SELECT count(*) FROM memory_rank_postings").fetchone()[0] == 0
        _check_rank_info(conn)
        return entries, docs, terms, _postings(blocks)

    entries, docs, terms, postings = store.db.read(read)
    assert set(docs) == {row[0] for row in entries}
    df: Counter[str] = Counter()
    expected_postings = set()
    for entry_id, *fields in entries:
        counts, length = entry_terms(fields)
        doc, stored_length, stored = docs[entry_id]
        assert (stored_length, stored) == (length, dict(counts))
        df.update(counts.keys())
        for term, tf in counts.items():
            expected_postings.add((term, impact(tf, length), doc))
    assert postings == expected_postings
    assert (
        {term: value for term, value in terms.items() if value} == {**df, "": len(entries)}
        if entries
        else True
    )


def _check_rank_info(conn: Any) -> None:
    """``memory_rank_info`` (migration 0015) holds a row for each entry of the index, equal to
    its entry's columns: what the walk reads of an entry to place it and filter it."""
    held = conn.execute("SELECT doc, id, scope, kind, status, importance, summary FROM memory_rank_info")
    joined = conn.execute(
        "SELECT d.doc, m.id, m.scope, m.kind, m.status, m.importance, m.lc_kind = 'summary'"
        " FROM memory_rank_docs AS d JOIN memory_entries AS m ON m.id = d.id"
    ).fetchall()
    assert sorted(_info_row(row) for row in held.fetchall()) == sorted(_info_row(row) for row in joined)


def _info_row(row: Any) -> tuple[int, str, str, str, str, int, bool]:
    doc, entry_id, scope, kind, status, importance, summary = row
    return int(doc), entry_id, scope, kind, status, int(importance), bool(summary)


def _postings(blocks: list[Any]) -> set[tuple[str, float, int]]:
    """Every posting of the blocks (rows in key order), after checking what the search and the
    writes rely on: each list in order across its blocks, no block empty or past ``MOST``, each
    block's key at or before its first posting, and no posting twice."""
    postings: list[tuple[str, float, int]] = []
    for term, key_impact, key_doc, data in blocks:
        impacts, docs = _rank_blocks.unpack(bytes(data))
        assert 0 < len(docs) == len(impacts) <= _rank_blocks.MOST
        assert (-key_impact, key_doc) <= (-impacts[0], docs[0])
        if postings and postings[-1][0] == term:
            assert (-postings[-1][1], postings[-1][2]) < (-key_impact, key_doc)
        postings.extend((term, value, doc) for value, doc in zip(impacts, docs, strict=True))
    ordered = [(term, -value, doc) for term, value, doc in postings]
    assert ordered == sorted(set(ordered))  # in list order within each term, no duplicates
    return set(postings)


def expected_ranking(store: Store, query: str, options: dict[str, Any]) -> list[tuple[str, float]]:
    """The reference ranking over every stored entry, with the filters applied in Python."""
    rows = store.db.read(
        lambda conn: conn.execute(
            "SELECT id, lc_title, lc_body, lc_scope, lc_kind, importance, scope, kind, status"
            " FROM memory_entries"
        ).fetchall()
    )
    allowed = options.get("allowed_scopes")
    passes = {
        row[0]: (options.get("scope") in (None, row[6]))
        and (options.get("kind") in (None, row[7]))
        and (allowed is None or row[6] in allowed)
        and not (options.get("exclude_stale") and row[8] == "stale")
        for row in rows
    }
    entries = [(row[0], row[1:5], row[4] == "summary", row[5]) for row in rows]
    found = reference_ranking(entries, query, passes=passes)
    limit = options.get("limit", 10)
    return found[:limit] if limit > 0 else found
