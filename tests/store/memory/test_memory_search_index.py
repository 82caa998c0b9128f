"""The trigram index behind ``memory.query``'s substring search: used, in step, migrated.

- the search reads the index's candidates, not every row, when they are fewer (and scans when
  they are not, or when the needle is too short for a trigram);
- every write of an entry's text leaves the index matching the table (FTS5's integrity check,
  which also compares an external-content index with its table);
- a database created before migration 0009 has its entries indexed by the migration.
"""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from store import ProjectPaths, Store, init_project, open_store
from store.db import _migrations
from store.memory import MemoryEntry
from store.memory._actions import lexical_resynthesis
from store.memory._query import CHUNK, FEW, search
from store.memory._search import MemoryFilter

_ALL = MemoryFilter(None, None, None, False, 0)


def _record(store: Store, **fields: Any) -> MemoryEntry:
    values: dict[str, Any] = {"scope": "project", "kind": "decision", "title": "t", "body_md": "b"}
    return store.memory.record(actor="op", **{**values, **fields})


def _both(store: Store, query: str, filters: MemoryFilter = _ALL) -> list[MemoryEntry]:
    """The answer of the indexed path, after checking that the scan path answers the same."""
    indexed = store.db.read(lambda conn: search(conn, query, filters, indexed=True))
    assert indexed == _scan(store, query, filters), query
    return indexed


def _scan(store: Store, query: str, filters: MemoryFilter = _ALL) -> list[MemoryEntry]:
    return store.db.read(lambda conn: search(conn, query, filters, indexed=False))


def _in_step(store: Store) -> None:
    """FTS5's integrity check, rank 1: the index holds exactly what the table's rows hold."""
    check = "INSERT INTO memory_trigram (memory_trigram, rank) VALUES ('integrity-check', 1)"
    store.db.write(lambda conn: conn.execute(check))


@contextmanager
def _statements(store: Store) -> Iterator[list[str]]:
    """Every statement this thread's connection runs meanwhile."""
    seen: list[str] = []
    conn = store.db.connection()
    conn.set_trace_callback(seen.append)
    try:
        yield seen
    finally:
        conn.set_trace_callback(None)


def _key_statement(seen: list[str]) -> str:
    """The statement that ranked the keys (the search's second step)."""
    keys = [sql for sql in seen if sql.startswith("SELECT m.rowid, ")]
    assert len(keys) == 1, seen
    return keys[0]


def _route(seen: list[str]) -> str:
    """Which rows the keys were read from: ``"rowids"`` (the index's few candidates, read once),
    ``"join"`` (the index, joined) or ``"scan"``."""
    key = _key_statement(seen)
    if "memory_trigram MATCH" in key:
        return "join"
    if "json_each" in key:
        assert any(sql.startswith("SELECT rowid FROM memory_trigram WHERE") for sql in seen), seen
        return "rowids"
    assert "memory_trigram" not in key
    return "scan"


# -- the index is used, and only when it prunes ----------------------------------------------------


def _filler(store: Store, count: int, **fields: Any) -> None:
    items = [
        {"scope": "project", "kind": "fact", "title": f"Note {i}", "body_md": f"plain words {i}", **fields}
        for i in range(count)
    ]
    store.memory.record_many(items, actor="op")


def _steps(store: Store, fn: Callable[[], object]) -> int:
    """SQLite virtual-machine steps (in thousands) that ``fn`` takes on this thread's connection."""
    steps = [0]

    def tick() -> int:
        steps[0] += 1
        return 0

    conn = store.db.connection()
    conn.set_progress_handler(tick, 1000)
    try:
        fn()
    finally:
        conn.set_progress_handler(None, 0)
    return steps[0]


def test_a_rare_needle_reads_its_candidates_not_every_row(store: Store) -> None:
    _filler(store, 1500)
    rare = _record(store, title="The zanzibarite rule", body_md="Only here.")
    with _statements(store) as seen:
        found = store.memory.query("Zanzibarite")
    assert [entry.id for entry in found] == [rare.id]
    assert _route(seen) == "rowids"
    probes = [sql for sql in seen if sql.startswith("SELECT rowid FROM memory_trigram WHERE")]
    assert len(probes) == 1, probes  # the cheap cover sufficed: the phrase was never asked
    assert '\'"zan" AND "zib" AND "ari" AND "ite"\'' in probes[0], probes
    indexed = _steps(store, lambda: store.memory.query("zanzibarite"))
    scanned = _steps(store, lambda: _scan(store, "zanzibarite"))
    assert indexed * 10 < scanned, (indexed, scanned)


def test_a_needle_in_most_rows_scans(store: Store) -> None:
    _filler(store, 2 * FEW)  # more candidates than the index takes without asking
    with _statements(store) as seen:
        assert len(store.memory.query("plain words", limit=0)) == 2 * FEW
    assert _route(seen) == "scan"


def test_words_whose_trigrams_fall_together_by_chance_are_asked_as_a_phrase(store: Store) -> None:
    """The cheap cover of 'cache index' is in every row below; the phrase in three: those are read."""
    _filler(store, FEW + 200, body_md="the cache and the index")
    wanted = [_record(store, title=f"Cache index {i}").id for i in range(3)]
    with _statements(store) as seen:
        found = store.memory.query("cache INDEX", limit=0)
    assert sorted(e.id for e in found) == sorted(wanted)
    assert _route(seen) == "rowids"
    probes = [sql for sql in seen if sql.startswith("SELECT rowid FROM memory_trigram WHERE")]
    assert len(probes) == 2, probes  # the cover found too many; the phrase, three
    assert _both(store, "cache index") == found


def test_more_than_few_candidates_in_under_half_the_rows_read_the_index(store: Store) -> None:
    """Past FEW candidates the index is still taken while they are under half the rows."""
    _filler(store, FEW + 200, body_md="a common marker")
    _filler(store, FEW + 400)  # rows without it: the candidates are about 45% of the table
    with _statements(store) as seen:
        found = store.memory.query("Common marker", limit=0)
    assert len(found) == FEW + 200
    assert _route(seen) == "join"
    assert _both(store, "common marker", MemoryFilter(None, None, None, False, 5)) == found[:5]


def test_a_needle_shorter_than_a_trigram_scans(store: Store) -> None:
    _record(store, title="ab")
    with _statements(store) as seen:
        assert len(store.memory.query("ab")) == 1
    assert not any("memory_trigram" in sql for sql in seen)


def test_a_small_scope_scans_through_the_scope_index(store: Store) -> None:
    _filler(store, 1200, body_md="the common phrase")
    _record(store, scope="T-1", body_md="the common phrase, once in T-1")
    with _statements(store) as seen:
        assert len(store.memory.query("common phrase", scope="T-1")) == 1
    assert _route(seen) == "scan"
    assert len(_both(store, "common phrase", MemoryFilter("T-1", None, None, False, 10))) == 1


def test_the_matching_rows_are_read_in_rowid_order_and_answered_in_rank_order(store: Store) -> None:
    """Later entries score higher, so rank order is the reverse of the table's: the rows are still
    read along the table, chunk after chunk, and the answer is still in rank order."""
    items = [
        {"scope": "project", "kind": "fact", "title": "zebra " * (1 + i // 100), "body_md": "b"}
        for i in range(3 * CHUNK)
    ]
    store.memory.record_many(items, actor="op")
    with _statements(store) as seen:
        found = store.memory.query("zebra", limit=0)
    scores = [int(e.score or 0) for e in found]
    assert scores == sorted(scores, reverse=True)
    assert found[0].score == 1 + (3 * CHUNK - 1) // 100
    reads = [sql for sql in seen if sql.startswith("SELECT m.id, ") and "json_each('" in sql]
    assert len(reads) == 3, reads
    rowids = [rowid for sql in reads for rowid in json.loads(sql.split("json_each('")[1].split("')")[0])]
    assert rowids == sorted(rowids) and len(rowids) == 3 * CHUNK


def test_characters_fts5_reads_alike_are_candidates_only(store: Store) -> None:
    """FTS5 reads U+FFFE and U+FFFF as U+FFFD: the index offers the row, the exact count refuses it."""
    _record(store, title="ab\ufffdcd")
    candidates = store.db.read(
        lambda conn: conn.execute(
            "SELECT count(*) FROM memory_trigram WHERE memory_trigram MATCH ?", ('"ab\ufffecd"',)
        ).fetchone()[0]
    )
    assert candidates == 1
    assert _both(store, "ab\ufffecd") == []
    assert [entry.score for entry in _both(store, "AB\ufffdCD")] == [1]


@pytest.mark.parametrize(
    "query",
    ['"hi"', 'say "hi" now', '"', '""', "a OR b", "x* NEAR(y", "col:val", "-not ^this", "100%_done", "'; --"],
)
def test_fts5_syntax_in_a_query_is_text(store: Store, query: str) -> None:
    entry = _record(store, title=f"before {query} after", body_md=query.upper())
    found = _both(store, query)
    assert [e.id for e in found] == [entry.id]
    assert found[0].score == 2


def test_a_query_of_the_longest_length_is_found_through_the_index(store: Store) -> None:
    text = ("the quick brown fox " * 500)[:10_000]
    entry = _record(store, body_md=f"start {text} end")
    with _statements(store) as seen:
        assert [e.id for e in store.memory.query(text)] == [entry.id]
    assert _route(seen) == "rowids"
    assert _both(store, text) == store.memory.query(text)


def test_the_search_builds_the_same_records_as_a_read_by_id(store: Store) -> None:
    """The search builds entries from plain tuples (entry_from_values), not by column name."""
    plain = _record(store, title="Record zebu", source_event_id=7, importance=2**63 - 1)
    checked = _record(
        store, title="Checked zebu", checks=[{"kind": "forbid_added", "pattern": "verify=False"}]
    )
    fields = {"scope": "T-1", "kind": "fact", "title": "Tagged zebu", "body_md": "b", "tags": ["x", "y"]}
    tagged = store.memory_admin.create({**fields, "confidence": 0.25}, actor="op").body["memory"]["id"]
    store.memory_admin.act(tagged, "pin", actor="op")
    store.memory_admin.act(plain.id, "archive", actor="op")
    found = store.memory.query("zebu", limit=0)
    assert {e.id for e in found} == {plain.id, checked.id, tagged}
    for entry in found:
        assert dataclasses.replace(entry, score=None) == store.memory.get(entry.id)
        assert entry.score == 1
    # entry_from_values fills the instance dict at once: nothing that __init__ would run is skipped.
    assert not hasattr(MemoryEntry, "__post_init__")
    assert not hasattr(MemoryEntry, "__slots__")
    with pytest.raises(dataclasses.FrozenInstanceError):
        found[0].title = "changed"  # type: ignore[misc]
    assert store.memory.query("", limit=1)[0].score == 2**63 - 1  # an importance, to the last digit


# -- every write keeps the index in step -----------------------------------------------------------


def _writes() -> dict[str, Callable[[Store, str], str]]:
    """Each way an entry's text changes: ``fn(store, id)`` rewrites entry ``id`` with the word
    ``newword`` (the entry first holds ``oldword``) and returns the ID that now holds it."""

    def replace(store: Store, memory_id: str) -> str:
        return _record(store, memory_id=memory_id, title="Newword title", scope="T-9", kind="Fact").id

    def replace_same_text(store: Store, memory_id: str) -> str:
        # Only the status changes (an operator may): the text, and so the index, stays.
        _record(store, memory_id=memory_id, title="Oldword title", body_md="oldword body", status="archived")
        return _record(store, memory_id=memory_id, title="Oldword newword").id

    def mark_stale(store: Store, memory_id: str) -> str:
        store.memory.mark_stale(memory_id=memory_id, reason_md="see newword", actor="op")
        return memory_id

    def revise(store: Store, memory_id: str) -> str:
        fields = {"title": "Newword", "body_md": "newword body", "expected_revision": 1}
        store.memory_admin.revise(memory_id, fields, actor="op")
        return memory_id

    def merge(store: Store, memory_id: str) -> str:
        other = store.memory_admin.create(
            {"scope": "project", "kind": "fact", "title": "Newword", "body_md": "newword"}, actor="op"
        )
        merged = store.memory_admin.merge(memory_id, other.body["memory"]["id"], actor="op")
        return str(merged.body["memory"]["id"])

    def archive_and_restore(store: Store, memory_id: str) -> str:
        for action in ("archive", "restore", "pin"):
            store.memory_admin.act(memory_id, action, actor="op")
        return _record(store, memory_id=memory_id, title="newword").id

    def resynthesis(store: Store, memory_id: str) -> str:
        request = store.memory_admin.request_resynthesis(memory_id, actor="op").body["request"]
        store.memory_admin.fulfil_resynthesis(
            request["id"], lambda entry, history: "Resynthesised: newword", provider="test"
        )
        return memory_id

    def lexical(store: Store, memory_id: str) -> str:
        _record(store, memory_id=memory_id, title="Oldword", body_md="newword\n\n\n\nnewword")
        request = store.memory_admin.request_resynthesis(memory_id, actor="op").body["request"]
        store.memory_admin.fulfil_resynthesis(request["id"], lexical_resynthesis, provider="lexical")
        return memory_id

    writes = (replace, replace_same_text, mark_stale, revise, merge, archive_and_restore)
    return {fn.__name__: fn for fn in (*writes, resynthesis, lexical)}


@pytest.mark.parametrize("write", list(_writes()))
def test_every_write_of_an_entry_keeps_the_index_in_step(store: Store, write: str) -> None:
    _filler(store, 5)
    entry = _record(store, title="Oldword title", body_md="oldword body")
    _in_step(store)
    holder = _writes()[write](store, entry.id)
    _in_step(store)
    assert holder in [e.id for e in _both(store, "newword")]
    stored = store.memory.get(entry.id)
    still_old = "oldword" in f"{stored.title} {stored.body_md} {stored.scope} {stored.kind}".lower()
    assert (entry.id in [e.id for e in _both(store, "OLDWORD")]) == still_old


def test_inserts_one_at_a_time_and_in_bulk_are_indexed(store: Store) -> None:
    one = _record(store, title="Alone with quokka")
    many = store.memory.record_many(
        [{"scope": "project", "kind": "fact", "title": f"Quokka {i}", "body_md": "x"} for i in range(3)],
        actor="op",
    )
    created = store.memory_admin.create(
        {"scope": "project", "kind": "fact", "title": "t", "body_md": "a quokka"}, actor="op"
    )
    _in_step(store)
    found = {e.id for e in _both(store, "quokka")}
    assert found == {one.id, *(e.id for e in many), created.body["memory"]["id"]}


# -- the migration indexes what was there before it ------------------------------------------------


def test_migration_0009_indexes_the_entries_stored_before_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    everything = _migrations.load_migrations()
    assert "0009_memory_trigram" in [m.name for m in everything]
    paths: ProjectPaths = init_project(tmp_path / "old")[0]
    with monkeypatch.context() as patched:
        patched.setattr(_migrations, "load_migrations", lambda: [m for m in everything if m.name < "0009"])
        patched.setattr("store.memory._store._backlog_waits", lambda conn: False)  # no 0012 yet
        for module in ("_write", "_store"):  # nor its tables
            patched.setattr(f"store.memory.{module}.index_entries", lambda conn, ids: None)
        old = open_store(paths)
        before = [_record(old, title=f"Legacy wombat {i}", body_md="before the index") for i in range(3)]
        _record(old, title="Unrelated", body_md="nothing")
        tables = old.db.read(lambda conn: [r[0] for r in conn.execute("SELECT name FROM sqlite_master")])
        assert "memory_trigram" not in tables
        old.close()
    upgraded = open_store(paths)  # applies 0009
    try:
        _in_step(upgraded)
        with _statements(upgraded) as seen:
            found = upgraded.memory.query("legacy WOMBAT", limit=0)
        assert _route(seen) == "rowids"
        assert sorted(e.id for e in found) == sorted(e.id for e in before)
        assert _both(upgraded, "legacy wombat") == found
        after = _record(upgraded, title="New wombat")
        assert after.id in [e.id for e in _both(upgraded, "wombat")]
    finally:
        upgraded.close()


def test_the_trigram_index_keeps_python_case_folding(store: Store) -> None:
    """The index holds Python's ``lower()`` as it is: FTS5 folding again its own way would offer
    other rows (a final sigma as a sigma), and 'İ' or 'ß' must stay what Python makes of them."""
    dotted = _record(store, title="İstanbul")  # lower(): 'i̇stanbul', with a combining dot
    sharp = _record(store, title="STRAẞE")  # lower(): 'straße'
    final = _record(store, title="aς bc")  # a final sigma, which FTS5 folds to 'σ'
    assert [e.id for e in _both(store, "İSTANBUL")] == [dotted.id]
    assert _both(store, "istanbul") == []  # Python's lower() keeps the dot
    assert [e.id for e in _both(store, "STRAßE")] == [sharp.id]
    assert _both(store, "strasse") == []
    assert [e.id for e in _both(store, "AΣ B")] == [final.id]  # lower() ends a word with 'ς'
    assert _both(store, "aσ b") == []

    def candidates(conn: sqlite3.Connection) -> int:
        sql = "SELECT count(*) FROM memory_trigram WHERE memory_trigram MATCH ?"
        return int(conn.execute(sql, ('"aσ b"',)).fetchone()[0])

    assert store.db.read(candidates) == 0
