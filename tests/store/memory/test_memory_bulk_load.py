"""The benchmark's bulk loader builds the same indexes' answers as normal writes.

``benchmarks.bench_memory._bulk_load`` (used at 1,000,000 entries) writes the rows with the
indexes' write hooks off, then builds the trigram index (FTS5 ``rebuild``) and the ranked index
(the store's own backlog drain) over them. Its figures stand for the store's only if every query
answers the same as on a project written entry by entry: checked here on a small realistic
corpus, read through short prefixes so that reading deeper is exercised, scoped and not.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks import bench_memory
from benchmarks._corpus import Corpus
from store import init_project, open_store
from store.memory import _ranked

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
