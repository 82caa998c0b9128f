"""``match: "ranked"``: the impact-ordered index answers exactly what the ranking function says.

For random corpora, random writes (new entries, replacements, stale marks) and random queries,
filters and limits, ``memory.query`` answers entry for entry, in order and to the bit of each
score, what :func:`~store.memory._rank.reference_ranking` computes directly from the entries'
text. The prefixes first read are made tiny (``DEPTH``) and entries settled one or two at a time
(``BLOCK``), so that deeper reads, bounds where a prefix stops, settling from stored terms,
marks of lists past one byte and scoring a narrow scope directly are all exercised; the
index's own invariants are checked after every example.
"""

from __future__ import annotations

import json
import random
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from store import Store, init_project, open_store
from store.db import _migrations
from store.memory import _rank_blocks, _rank_sums, _ranked
from store.memory._rank import entry_terms, impact, query_terms, score
from store.memory._search import MemoryFilter
from tests.store.memory.helpers import check_rank_index, expected_ranking, wipe_memory

_WORDS = ["alpha", "beta", "gamma", "delta", "Ärger", "straße", "İstanbul", "x_y", "42", "ǅemal"]
_TEXT = (
    st.lists(st.sampled_from([*_WORDS, " ", ", ", "\n", "-", "."]), min_size=1, max_size=14)
    .map("".join)
    .map(lambda text: text if text.strip() else text + "alpha")
)
_ENTRY = st.fixed_dictionaries(
    {
        "scope": st.sampled_from(["project", "T-1", "T-2"]),
        "kind": st.sampled_from(["decision", "fact", "summary", "Summary"]),
        "title": _TEXT,
        "body_md": _TEXT,
        "importance": st.sampled_from([1, 1, 2, 3]),
    }
)


_reset = wipe_memory


@pytest.fixture(autouse=True, scope="module")
def _small_blocks() -> Any:
    """Blocks of two or three postings, so that writes split and empty them and prefixes end
    within a few postings (each property test draws other sizes too)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_rank_blocks, "SIZE", 2)
        patch.setattr(_rank_blocks, "MOST", 3)
        yield


_FILTERS = st.fixed_dictionaries(
    {
        "scope": st.sampled_from([None, None, "project", "T-1"]),
        "kind": st.sampled_from([None, None, "fact", "summary"]),
        "allowed_scopes": st.sampled_from([None, None, frozenset({"T-1", "project"})]),
        "exclude_stale": st.booleans(),
        "limit": st.sampled_from([1, 1, 2, 3, 10, 0]),
    }
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=st.data(), entries=st.lists(_ENTRY, min_size=0, max_size=30), depth=st.sampled_from([1, 2, 3, 512])
)
def test_the_index_answers_exactly_what_the_ranking_function_says(
    shared_store: Store, data: st.DataObject, entries: list[dict[str, Any]], depth: int
) -> None:
    store = shared_store
    _reset(store)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_ranked, "DEPTH", depth)
        patch.setattr(_ranked, "BLOCK", data.draw(st.sampled_from([1, 2, 256])))
        size = data.draw(st.sampled_from([1, 2, 4]))
        patch.setattr(_rank_blocks, "SIZE", size)
        patch.setattr(_rank_blocks, "MOST", data.draw(st.sampled_from([size, 2 * size, 2 * size + 1])))
        patch.setattr(_ranked, "NARROW", data.draw(st.sampled_from([0, 2_000])))
        # marks of two bits a byte: a query's lists then fill more than one byte of marks
        patch.setattr(_rank_sums, "_WIDTH", data.draw(st.sampled_from([2, 8])))
        stored = [store.memory.record(actor="op", **fields) for fields in entries[: len(entries) // 2]]
        stored += store.memory.record_many(entries[len(entries) // 2 :], actor="op")
        for _ in range(data.draw(st.integers(0, 6)) if stored else 0):
            target = data.draw(st.sampled_from(stored)).id
            if data.draw(st.booleans()):
                store.memory.mark_stale(memory_id=target, reason_md=data.draw(_TEXT), actor="op")
            else:
                fields: dict[str, Any] = data.draw(_ENTRY)
                store.memory.record(actor="op", memory_id=target, **fields)
        check_rank_index(store)
        for _ in range(4):
            query = " ".join(
                data.draw(
                    st.lists(st.sampled_from([*_WORDS, "ärger", "STRASSE", "zeta"]), min_size=1, max_size=3)
                )
            )
            options: dict[str, Any] = data.draw(_FILTERS)
            found = store.memory.query(query, match="ranked", **options)
            expected = expected_ranking(store, query, options)
            assert [(e.id, e.score) for e in found] == expected, (query, options)


def test_equal_scores_are_ordered_by_importance_then_id_and_summaries_come_last(store: Store) -> None:
    fields = {"scope": "project", "kind": "fact", "title": "alpha", "body_md": "x"}
    store.memory.record_many([{**fields, "kind": "summary", "importance": 99}] * 3, actor="op")
    store.memory.record_many([fields] * 30 + [{**fields, "importance": 60}] * 2, actor="op")
    everything = store.memory.query("alpha", match="ranked", limit=40)
    assert len({e.score for e in everything}) == 1
    by_importance = {60: [], 50: [], 99: []}  # type: dict[int, list[str]]
    for entry in everything:
        by_importance[entry.importance].append(entry.id)
    assert [e.id for e in everything] == sorted(by_importance[60]) + sorted(by_importance[50]) + sorted(
        by_importance[99]
    )
    top = store.memory.query("alpha", match="ranked", limit=3)
    assert [e.id for e in top] == [e.id for e in everything[:3]]


def test_entries_older_than_the_index_are_ranked_directly_then_indexed_when_the_project_opens(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    everything = _migrations.load_migrations()
    paths = init_project(tmp_path / "old")[0]
    with monkeypatch.context() as patched:
        patched.setattr(_migrations, "load_migrations", lambda: [m for m in everything if m.name < "0012"])
        patched.setattr("store.memory._store._backlog_waits", lambda conn: False)  # no backlog yet
        for module in ("_write", "_store"):  # nor its tables
            patched.setattr(f"store.memory.{module}.index_entries", lambda conn, ids: None)
        old = open_store(paths)
        for i in range(5):
            old.memory.record(
                actor="op", scope="project", kind="fact", title=f"wombat {'x ' * i}", body_md="b"
            )
        old.close()
    with monkeypatch.context() as patched:
        patched.setattr("store.memory._store._backlog_waits", lambda conn: False)
        waiting = open_store(paths)  # applies 0012, and leaves the backlog waiting
    assert waiting.db.read(_backlog) == 5
    direct = waiting.memory.query("wombat x", match="ranked", limit=0)
    assert [(e.id, e.score) for e in direct] == expected_ranking(waiting, "wombat x", {"limit": 0})
    waiting.close()
    upgraded = open_store(paths)  # drains the backlog
    try:
        assert upgraded.db.read(_backlog) == 0
        check_rank_index(upgraded)
        assert upgraded.memory.query("wombat x", match="ranked", limit=0) == direct
    finally:
        upgraded.close()


def _backlog(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT count(*) FROM memory_rank_backlog").fetchone()[0])


def _ranked_pairs(store: Store, query: str, **options: Any) -> list[tuple[str, float | None]]:
    return [(e.id, e.score) for e in store.memory.query(query, match="ranked", **options)]


def test_an_entry_middling_in_two_lists_beats_the_heads_of_each(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The trap of an early stop: the best entry is in neither list's head, only high in their sum.
    The walk (not the fallback) must find it, one entry settled at a time."""
    monkeypatch.setattr(_ranked, "BLOCK", 1)
    monkeypatch.setattr(_ranked, "evaluate", _no_fallback)
    fields = {"scope": "project", "kind": "fact", "importance": 1}
    heads = [{**fields, "title": word * 3 + " filler", "body_md": "x"} for word in ("alpha ", "beta ")]
    tails = [
        {**fields, "title": f"{word} " + "pad " * n, "body_md": "y"}
        for n in range(40)
        for word in ("alpha", "beta")
    ]
    both = {**fields, "title": "alpha beta alpha beta", "body_md": "z"}
    stored = store.memory.record_many([*heads, *tails, both], actor="op")
    top = _ranked_pairs(store, "alpha beta", limit=1)
    assert top == expected_ranking(store, "alpha beta", {"limit": 1})
    assert top[0][0] == stored[-1].id
    for limit in (2, 3, 7):
        assert _ranked_pairs(store, "alpha beta", limit=limit) == expected_ranking(
            store, "alpha beta", {"limit": limit}
        )


def test_an_entry_below_every_prefix_is_found_by_reading_deeper(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Prefixes of two postings: an entry holding both terms below both prefixes (in neither)
    can outscore every entry of the prefixes, so the walk must read deeper, not answer from them
    and not score every match."""
    monkeypatch.setattr(_ranked, "DEPTH", 2)
    monkeypatch.setattr(_ranked, "BLOCK", 1)
    monkeypatch.setattr(_ranked, "evaluate", _no_fallback)
    fields = {"scope": "project", "kind": "fact", "importance": 1}
    singles = [
        {**fields, "title": f"{word} {word}", "body_md": "q"} for _ in range(6) for word in ("alpha", "beta")
    ]
    hidden = {**fields, "title": "alpha beta " + "pad " * 60, "body_md": "r"}
    stored = store.memory.record_many([*singles, hidden], actor="op")
    for limit in (1, 3, 13):
        assert _ranked_pairs(store, "alpha beta", limit=limit) == expected_ranking(
            store, "alpha beta", {"limit": limit}
        )
    assert stored[-1].id in [entry_id for entry_id, _ in _ranked_pairs(store, "alpha beta", limit=13)]


def test_ties_past_the_prefix_and_filters_that_pass_few_are_settled_by_the_walk(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What made the cut lists score every match: entries of one impact running past the prefix
    (a common identifier's parts at 1,000,000 entries), and a scope or kind that passes few of
    a prefix's entries (``scope=project``, a grant's scopes). The walk reads deeper and answers
    exactly, ties ordered by importance and id."""
    monkeypatch.setattr(_ranked, "DEPTH", 4)
    monkeypatch.setattr(_ranked, "NARROW", 0)
    monkeypatch.setattr(_ranked, "evaluate", _no_fallback)
    entries = [
        {
            "scope": "project" if i % 7 == 0 else f"T-{i % 3}",
            "kind": "constraint" if i % 11 == 0 else "fact",
            "title": "githo dopet.list._dreas" if i % 5 else "dopet.list._dreas",
            "body_md": "same length here",
            "importance": 1 + i % 4,
        }
        for i in range(120)
    ]
    store.memory.record_many(entries, actor="op")
    grant = frozenset({"project", "T-1"})
    for options in (
        {"limit": 10},
        {"limit": 10, "scope": "project"},
        {"limit": 3, "scope": "T-2"},
        {"limit": 10, "allowed_scopes": grant},
        {"limit": 5, "kind": "constraint"},
        {"limit": 40, "scope": "project", "kind": "constraint"},
    ):
        for query in ("githo dopet.list._dreas", "dopet.list._dreas", "dreas"):
            assert _ranked_pairs(store, query, **options) == expected_ranking(store, query, options), (
                query,
                options,
            )


def _scoped_entries(count: int) -> list[dict[str, Any]]:
    """``count`` entries of a third in ``project`` and the rest in three task scopes, a fifth of
    them constraints, holding ``alpha`` and ``beta`` a varying number of times."""
    return [
        {
            "scope": "project" if i % 3 == 0 else f"T-{i % 4}",
            "kind": "constraint" if i % 5 == 0 else "fact",
            "title": " ".join(["alpha"] * (1 + i % 4) + ["beta"] * (1 + i % 3)),
            "body_md": "delta " + "gamma " * (i % 6),
            "importance": 1,
        }
        for i in range(count)
    ]


def _recorded_probes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The entries the walk settles from their stored terms, appended as it probes them."""
    probed: list[int] = []
    real_probe = _ranked._Walk._probe

    def recording_probe(walk: Any, docs: list[int]) -> None:
        probed.extend(docs)
        real_probe(walk, docs)

    monkeypatch.setattr(_ranked._Walk, "_probe", recording_probe)
    return probed


def test_under_a_scope_or_kind_filter_only_entries_that_pass_it_are_probed(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An entry missing from an open prefix is settled from its stored terms (a probe, two random
    reads); under a scope or kind filter its narrow row is read first, and an entry that fails
    the filters is never probed: it could not place. The answer is still exactly the function's."""
    monkeypatch.setattr(_ranked, "DEPTH", 4)
    monkeypatch.setattr(_ranked, "NARROW", 0)
    monkeypatch.setattr(_ranked, "evaluate", _no_fallback)
    probed = _recorded_probes(monkeypatch)
    store.memory.record_many(_scoped_entries(90), actor="op")
    for options in ({"limit": 5, "kind": "constraint"}, {"limit": 5, "scope": "project"}):
        probed.clear()
        assert _ranked_pairs(store, "alpha beta gamma", **options) == expected_ranking(
            store, "alpha beta gamma", options
        )
        assert probed, "the walk settled no entry from its stored terms: nothing was tested"
        column = "kind" if "kind" in options else "scope"
        passing = {options[column]}
        marks = ", ".join("?" * len(probed))
        sql = f"SELECT DISTINCT {column} FROM memory_rank_info WHERE doc IN ({marks})"
        found = store.db.read(lambda conn: {row[0] for row in conn.execute(sql, probed)})  # noqa: B023
        assert found == passing, (options, found)


def test_a_walk_under_a_scope_or_kind_filter_first_reads_one_step_deeper(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A filtered walk settles candidates until ``limit`` pass: it starts where an unfiltered one
    reads second (``DEPTH * GROWTH``), and an unfiltered one at ``DEPTH``; both answer exactly."""
    monkeypatch.setattr(_ranked, "DEPTH", 4)
    monkeypatch.setattr(_ranked, "NARROW", 0)
    monkeypatch.setattr(_ranked, "evaluate", _no_fallback)
    depths: list[int] = []
    real_run = _ranked._Walk.run

    def recording_run(walk: Any, depth: int) -> Any:
        depths.append(depth)
        return real_run(walk, depth)

    monkeypatch.setattr(_ranked._Walk, "run", recording_run)
    store.memory.record_many(_scoped_entries(60), actor="op")
    grant = frozenset({"project"})
    for options, first in (
        ({"limit": 3}, 4),
        ({"limit": 3, "scope": "project"}, 4 * _ranked.GROWTH),
        ({"limit": 3, "kind": "constraint"}, 4 * _ranked.GROWTH),
        ({"limit": 3, "allowed_scopes": grant}, 4 * _ranked.GROWTH),
    ):
        depths.clear()
        assert _ranked_pairs(store, "alpha beta", **options) == expected_ranking(store, "alpha beta", options)
        assert depths[0] == first, (options, depths)


def test_a_walk_plans_its_depths_and_settles_fewer_entries_from_stored_terms(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three common words whose best entries hold all three but are long: the short entries holding
    one or two of them head every list, and settling them one by one from their stored terms was
    the walk's cost (three common words at 1,000,000 entries). A depth where no ``limit`` sums
    reach what an entry in no prefix may score is read past without settling, and a walk reading
    again goes where settling costs least: the same answer, a fraction of the probes."""
    monkeypatch.setattr(_ranked, "DEPTH", 4)
    monkeypatch.setattr(_ranked, "evaluate", _no_fallback)
    probes = _recorded_probes(monkeypatch)
    rng = random.Random(3)
    fields = {"scope": "project", "kind": "fact", "body_md": "x", "importance": 1}
    some = [" ".join(rng.sample(["alpha", "beta", "gamma"], rng.choice([1, 1, 2]))) for _ in range(300)]
    titles = [words + " pad" * rng.randrange(30) for words in some]
    titles += ["alpha beta gamma" + " pad" * rng.randrange(10, 40) for _ in range(20)]
    store.memory.record_many([{**fields, "title": title} for title in titles], actor="op")
    for limit in (1, 3, 5):
        expected = expected_ranking(store, "alpha beta gamma", {"limit": limit})
        probes.clear()
        assert _ranked_pairs(store, "alpha beta gamma", limit=limit) == expected
        planned = len(probes)
        with monkeypatch.context() as unplanned:
            unplanned.setattr(_ranked._Walk, "_plan", lambda walk, *args: None)
            probes.clear()
            assert _ranked_pairs(store, "alpha beta gamma", limit=limit) == expected
        assert planned * 4 <= len(probes), (limit, planned, len(probes))


def _old_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, before: str, count: int) -> Any:
    """A project whose schema stops before migration ``before``, holding ``count`` entries that
    the store's current index did not write (its hooks off): the caller writes the old index."""
    everything = _migrations.load_migrations()
    paths = init_project(tmp_path / "old")[0]
    with monkeypatch.context() as patched:
        patched.setattr(_migrations, "load_migrations", lambda: [m for m in everything if m.name < before])
        for module in ("_write", "_store"):
            patched.setattr(f"store.memory.{module}.index_entries", lambda conn, ids: None)
        patched.setattr("store.memory._store._backlog_waits", lambda conn: False)
        old = open_store(paths)
        old.memory.record_many(
            [
                {"scope": "project", "kind": "fact", "title": f"wombat {'x ' * i}", "body_md": f"b{i % 3}"}
                for i in range(count)
            ],
            actor="op",
        )
    return paths, old


def _write_rows_index(conn: sqlite3.Connection, *, cut: float = 0.0) -> None:
    """The index as 0012 and 0013 wrote it: a row a posting (the postings below ``cut`` of
    ``wombat`` dropped, as 0012 cut lists)."""
    df: Counter[str] = Counter()
    rows = conn.execute("SELECT id, lc_title, lc_body, lc_scope, lc_kind FROM memory_entries ORDER BY id")
    for entry_id, *fields in rows.fetchall():
        counts, length = entry_terms(fields)
        terms = json.dumps(dict(sorted(counts.items())), separators=(",", ":"))
        doc = conn.execute(
            "INSERT INTO memory_rank_docs (id, length, terms) VALUES (?, ?, ?) RETURNING doc",
            (entry_id, length, terms),
        ).fetchone()[0]
        df.update(counts.keys())
        df[""] += 1
        for term, tf in counts.items():
            if term != "wombat" or impact(tf, length) >= cut:
                conn.execute(
                    "INSERT INTO memory_rank_postings (term, impact, doc) VALUES (?, ?, ?)",
                    (term, impact(tf, length), doc),
                )
    conn.executemany("INSERT INTO memory_rank_terms (term, df) VALUES (?, ?)", list(df.items()))


def test_a_project_indexed_with_cut_lists_is_reindexed_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Migration 0013: lists cut by the index of 0012 (postings dropped) are rebuilt whole from
    the backlog when the project opens, and answer the reference."""
    paths, old = _old_project(tmp_path, monkeypatch, "0013", 8)
    old.db.write(lambda conn: _write_rows_index(conn, cut=1.2))
    old.close()
    upgraded = open_store(paths)  # applies 0013 and 0014, then drains the backlog 0013 fills
    try:
        assert upgraded.db.read(_backlog) == 0
        check_rank_index(upgraded)
        for limit in (1, 3, 0):
            assert _ranked_pairs(upgraded, "wombat x", limit=limit) == expected_ranking(
                upgraded, "wombat x", {"limit": limit}
            )
    finally:
        upgraded.close()


def test_lists_of_a_row_a_posting_are_packed_into_blocks_when_the_project_opens(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Migration 0014: the lists 0013 left (a row a posting) are packed into blocks at open, a
    batch of terms at a time (here one), and the rows emptied; until then a ranked query reads
    the entries' text, and after it the blocks answer the reference."""
    paths, old = _old_project(tmp_path, monkeypatch, "0014", 12)
    old.db.write(_write_rows_index)
    old.close()
    with monkeypatch.context() as patched:
        patched.setattr("store.memory._store._backlog_waits", lambda conn: False)
        waiting = open_store(paths)  # applies 0014: every term waits to be packed
    waiting.db.write(lambda conn: _rank_blocks.convert(conn, batch=1))  # one term packed
    assert waiting.db.read(lambda conn: conn.execute("SELECT count(*) FROM memory_rank_blocks").fetchone()[0])
    direct = _ranked_pairs(waiting, "wombat x b1", limit=0)
    assert direct == expected_ranking(waiting, "wombat x b1", {"limit": 0})
    waiting.close()
    monkeypatch.setattr(_rank_blocks, "SIZE", 3)  # the packed blocks: three postings each,
    monkeypatch.setattr(_rank_blocks, "_PAGE", 6)  # read six at a time (wombat has twelve)
    upgraded = open_store(paths)
    try:
        assert (
            upgraded.db.read(
                lambda conn: conn.execute("SELECT count(*) FROM memory_rank_convert").fetchone()
            )[0]
            == 0
        )
        check_rank_index(upgraded)
        monkeypatch.setattr(_ranked, "DEPTH", 1)
        monkeypatch.setattr(_ranked, "NARROW", 0)
        for limit in (1, 3, 0):
            assert _ranked_pairs(upgraded, "wombat x b1", limit=limit) == expected_ranking(
                upgraded, "wombat x b1", {"limit": limit}
            )
        upgraded.memory.record(actor="op", scope="project", kind="fact", title="wombat x x x", body_md="b1")
        check_rank_index(upgraded)
        assert _ranked_pairs(upgraded, "wombat x b1", limit=2) == expected_ranking(
            upgraded, "wombat x b1", {"limit": 2}
        )
    finally:
        upgraded.close()


def _no_fallback(*args: Any) -> Any:
    raise AssertionError("the walk should have settled this query from the lists")


_SKEWED = st.lists(
    st.tuples(st.integers(0, 4), st.integers(0, 4), st.integers(0, 4), st.integers(0, 30)),
    min_size=1,
    max_size=40,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), shapes=_SKEWED)
def test_the_walk_stops_only_when_no_entry_left_can_place(
    shared_store: Store, data: st.DataObject, shapes: list[tuple[int, int, int, int]]
) -> None:
    """Entries holding each of three terms 0 to 4 times among up to 30 other words (so impacts
    vary with both), prefixes of one posting to whole lists, one to three entries settled at a
    time: the walk alone answers (no entry scored outside it), and exactly what the reference
    does, for every limit and filter (scopes, a grant's scopes, kinds)."""
    store = shared_store
    _reset(store)
    entries = [
        {
            "scope": data.draw(st.sampled_from(["project", "T-1"])),
            "kind": data.draw(st.sampled_from(["fact", "fact", "summary"])),
            "title": " ".join(["alpha"] * a + ["beta"] * b + ["gamma"] * c + ["pad"] * pad) or "pad",
            "body_md": "x",
            "importance": data.draw(st.sampled_from([1, 2])),
        }
        for a, b, c, pad in shapes
    ]
    store.memory.record_many(entries, actor="op")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_ranked, "BLOCK", data.draw(st.sampled_from([1, 2, 3])))
        patch.setattr(_ranked, "DEPTH", data.draw(st.sampled_from([1, 2, 5, 512])))
        patch.setattr(_ranked, "NARROW", 0)
        patch.setattr(_ranked, "evaluate", _no_fallback)
        for _ in range(3):
            query = " ".join(
                data.draw(st.lists(st.sampled_from(["alpha", "beta", "gamma"]), min_size=1, max_size=3))
            )
            options = {
                "limit": data.draw(st.sampled_from([1, 2, 3, 5])),
                "scope": data.draw(st.sampled_from([None, "T-1", "project"])),
                "kind": data.draw(st.sampled_from([None, None, "fact"])),
                "allowed_scopes": data.draw(st.sampled_from([None, frozenset({"T-1", "project"})])),
            }
            assert _ranked_pairs(store, query, **options) == expected_ranking(store, query, options), (
                query,
                options,
            )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    shapes=_SKEWED,
    query=st.lists(st.sampled_from(["alpha", "beta", "gamma", "zeta"]), min_size=1),
    depth=st.sampled_from([0, 1, 2, 512]),
)
def test_an_entry_settled_from_its_stored_terms_scores_what_the_ranking_function_says(
    shared_store: Store, shapes: list[tuple[int, int, int, int]], query: list[str], depth: int
) -> None:
    """The probe (an entry's exact score read from its stored terms, not from the lists) gives
    every entry, to the bit, the score of its terms' counts and its length by the function:
    with no prefix read, and after prefixes of ``depth`` postings (whose impacts it takes, and
    whose whole lists it does not search the stored terms for)."""
    store = shared_store
    _reset(store)
    titles = [
        " ".join(["alpha"] * a + ["beta"] * b + ["gamma"] * c + ["pad"] * pad) or "pad"
        for a, b, c, pad in shapes
    ]
    store.memory.record_many(
        [{"scope": "project", "kind": "fact", "title": title, "body_md": "x"} for title in titles], actor="op"
    )
    terms = query_terms(" ".join(query))
    weights = [0.5 + index for index in range(len(terms))]

    def probed(conn: Any) -> tuple[dict[int, float], dict[int, float]]:
        found = dict(conn.execute("SELECT term, df FROM memory_rank_terms").fetchall())
        df = [found.get(term, 0) for term in terms]  # each list's length
        walk = _ranked._Walk(conn, terms, weights, MemoryFilter(None, None, None, False, 10), df)
        if depth:
            walk._read(depth)
            walk.sums.clear()  # the thread's sums, which the next walk reuses: only the bounds count here
        rows = conn.execute(
            "SELECT d.doc, m.lc_title, m.lc_body, m.lc_scope, m.lc_kind FROM memory_rank_docs AS d"
            " JOIN memory_entries AS m ON m.id = d.id"
        ).fetchall()
        walk._probe([int(row[0]) for row in rows])
        expected = {}
        for row in rows:
            counts, length = entry_terms(row[1:])
            impacts = [impact(counts[term], length) if term in counts else None for term in terms]
            expected[int(row[0])] = score(weights, impacts)
        return walk.exact, expected

    found, expected = store.db.read(probed)
    assert found == expected
