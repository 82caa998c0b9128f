"""The benchmark's bulk loader builds the same indexes' answers as normal writes.

``benchmarks.bench_memory._bulk_load`` (used at 1,000,000 entries) writes the rows with the
indexes' write hooks off, then builds the trigram index (FTS5 ``rebuild``) and the ranked index
(:func:`benchmarks._rank_bulk.build_ranked_index`, each list written once) over them. Its figures
stand for the store's only if every query answers the same as on a project written entry by
entry: checked here on a small realistic corpus, read through short prefixes so that reading
deeper is exercised, scoped and not; and the ranked index's tables must hold what the store's own
backlog drain leaves over the same rows, list by list.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

import pytest

from benchmarks import bench_memory
from benchmarks._corpus import Corpus
from benchmarks._rank_bulk import build_ranked_index
from store import Store, init_project, open_store
from store.db import Database
from store.memory import _ranked
from store.memory._rank_blocks import unpack
from store.memory._rank_index import drain_backlog

_QUERIES = ["rollback cache", "the of", "index query migration", "rollback", "cache token retry"]


def test_bulk_loaded_and_written_projects_answer_alike(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_ranked, "DEPTH", 8)
    corpus = Corpus(seed=3)
    entries = [{**fields, "memory_id": f"M-{i:04d}"} for i, fields in enumerate(corpus.entries(0, 400))]
    written = open_store(init_project(tmp_path / "written")[0])
    bulk = open_store(init_project(tmp_path / "bulk")[0])
    try:
        for fields in entries[:50]:
            written.memory.record(actor="bench", **fields)  # type: ignore[arg-type]
        written.memory.record_many(entries[50:], actor="bench")
        bench_memory._bulk_load(bulk, iter(entries), len(entries))
        backlog = "SELECT count(*) FROM memory_rank_backlog"
        assert bulk.db.read(lambda conn: conn.execute(backlog).fetchone()[0]) == 0  # the index answers
        queries = [*_QUERIES, corpus.terms.rare, *corpus.terms.ranked]
        for query in queries:
            for options in (
                {"limit": 1},
                {"limit": 10},
                {"limit": 0},
                {"scope": "project", "limit": 5},
                {"allowed_scopes": frozenset({"project", "T-0042"}), "limit": 10},
            ):
                for match in ("ranked", "substring"):
                    got = [(e.id, e.score) for e in bulk.memory.query(query, match=match, **options)]
                    want = [(e.id, e.score) for e in written.memory.query(query, match=match, **options)]
                    assert got == want, (query, options, match)
    finally:
        written.close()
        bulk.close()


def _drained(db: Database) -> int:
    """The store's way for rows written before the index: every entry to the backlog, drained
    in small batches (so lists grow across batches and their blocks split)."""
    db.write(lambda conn: conn.execute("INSERT INTO memory_rank_backlog (id) SELECT id FROM memory_entries"))
    while db.write(partial(drain_backlog, batch=97)):
        pass
    return 0


def _index_tables(store: Store) -> dict[str, Any]:
    """Every table of the ranked index, the lists decoded from their blocks and joined in order."""

    def read(conn: Any) -> dict[str, Any]:
        lists: dict[str, list[tuple[float, int]]] = {}
        blocks = "SELECT term, data FROM memory_rank_blocks ORDER BY term, impact DESC, doc"
        for term, data in conn.execute(blocks):
            impacts, docs = unpack(bytes(data))
            lists.setdefault(term, []).extend(zip(impacts, docs, strict=True))
        return {
            "docs": conn.execute(
                "SELECT doc, id, length, terms FROM memory_rank_docs ORDER BY doc"
            ).fetchall(),
            "terms": conn.execute("SELECT * FROM memory_rank_terms ORDER BY term").fetchall(),
            "info": conn.execute("SELECT * FROM memory_rank_info ORDER BY doc").fetchall(),
            "backlog": conn.execute("SELECT count(*) FROM memory_rank_backlog").fetchall(),
            "lists": lists,
        }

    tables = store.db.read(read)
    return {name: [tuple(row) for row in rows] if name != "lists" else rows for name, rows in tables.items()}


def test_the_one_pass_index_holds_what_the_backlog_drain_leaves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    entries = [
        {**fields, "memory_id": f"M-{i:04d}"} for i, fields in enumerate(Corpus(seed=5).entries(0, 600))
    ]
    built = open_store(init_project(tmp_path / "built")[0])
    drained = open_store(init_project(tmp_path / "drained")[0])
    try:
        bench_memory._bulk_load(built, iter(entries), len(entries))
        monkeypatch.setattr(bench_memory, "build_ranked_index", _drained)
        bench_memory._bulk_load(drained, iter(entries), len(entries))
        want, got = _index_tables(drained), _index_tables(built)
        assert max(len(postings) for postings in want["lists"].values()) > 240  # lists that split
        assert got["backlog"] == [(0,)]
        assert got == want
        with pytest.raises(ValueError, match="not empty"):
            build_ranked_index(built.db)
    finally:
        built.close()
        drained.close()
