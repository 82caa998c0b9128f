"""Helpers shared by the memory search tests."""

from __future__ import annotations

import sqlite3

from store import Store

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
