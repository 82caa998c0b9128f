"""The memory contract (CONTRACTS.md "Memory tools") on a real SQLite file."""

from __future__ import annotations

import random
import sqlite3

import pytest

from store import InvalidArgument, NotFound, Store
from store.memory import MemoryEntry, _rank_blocks, _ranked
from store.memory._rank import reference_ranking
from tests.store.memory.helpers import check_rank_index


def _record(store: Store, **fields: object) -> MemoryEntry:
    values: dict[str, object] = {"scope": "project", "kind": "decision", "title": "t", "body_md": "b"}
    values.update(fields)
    return store.memory.record(actor="tester", **values)  # type: ignore[arg-type]


def test_record_returns_core_projection_with_defaults(store: Store) -> None:
    entry = _record(store, title="Use the builder", body_md="All SQL via builder")
    core = entry.core()
    assert {
        "id",
        "scope",
        "kind",
        "title",
        "body_md",
        "source_event_id",
        "importance",
        "status",
        "created_at",
        "updated_at",
    } <= set(core)
    assert core["id"].startswith("M-")
    assert core["source_event_id"] == 0
    assert core["importance"] == 50
    assert core["status"] == "active"
    assert core["created_at"].endswith("Z") and core["created_at"] == core["updated_at"]


def test_source_event_zero_is_stored_as_null(store: Store) -> None:
    entry = _record(store, source_event_id=0)
    raw = store.db.read(
        lambda c: c.execute("SELECT source_event_id FROM memory_entries WHERE id = ?", (entry.id,)).fetchone()
    )
    assert raw[0] is None
    assert entry.source_event_id == 0
    kept = _record(store, source_event_id=7)
    assert kept.source_event_id == 7


def test_importance_zero_becomes_fifty_and_is_not_clamped(store: Store) -> None:
    assert _record(store, importance=0).importance == 50
    assert _record(store, importance=1000).importance == 1000
    assert _record(store, importance=-3).importance == -3


def test_fields_are_stored_as_given(store: Store) -> None:
    entry = _record(store, scope="  Odd Scope ", kind="Decision", title=" spaced ", body_md="x\n")
    got = store.memory.get(entry.id)
    assert (got.scope, got.kind, got.title, got.body_md) == ("  Odd Scope ", "Decision", " spaced ", "x\n")


def test_upsert_is_full_replacement_keeping_created_at(store: Store) -> None:
    first = _record(store, memory_id="M-fixed", importance=80, source_event_id=5, status="draft")
    second = _record(store, memory_id="M-fixed", title="new title")
    assert second.id == "M-fixed"
    assert second.created_at == first.created_at
    assert second.updated_at >= first.updated_at
    # Omitted optional fields reset to their defaults.
    assert second.importance == 50
    assert second.source_event_id == 0
    assert second.status == "active"
    assert second.title == "new title"


def test_upsert_keeps_extra_fields(store: Store) -> None:
    _record(store, memory_id="M-extra")
    store.db.write(
        lambda c: c.execute(
            "UPDATE memory_entries SET tags = '[\"x\"]', pinned = 1, confidence = 0.9 WHERE id = 'M-extra'"
        )
    )
    after = _record(store, memory_id="M-extra", body_md="changed")
    assert after.tags == ["x"] and after.pinned and after.confidence == 0.9


def test_empty_memory_id_generates_one(store: Store) -> None:
    assert _record(store, memory_id="").id.startswith("M-")


def test_body_or_title_change_appends_revision(store: Store) -> None:
    entry = _record(store, memory_id="M-rev", body_md="one")
    _record(store, memory_id="M-rev", body_md="one")  # unchanged: no new revision
    after = _record(store, memory_id="M-rev", body_md="two")
    assert entry.revision == 1 and after.revision == 2
    rows = store.db.read(
        lambda c: c.execute(
            "SELECT revision, body_md FROM memory_revisions WHERE memory_id = 'M-rev' ORDER BY revision"
        ).fetchall()
    )
    assert [tuple(r) for r in rows] == [(1, "one"), (2, "two")]


def test_every_mutation_writes_its_event(store: Store) -> None:
    entry = _record(store, scope="T-1")
    store.memory.mark_stale(memory_id=entry.id, reason_md="superseded", actor="tester")
    events = store.db.read(
        lambda c: c.execute("SELECT type, task_id, payload FROM events ORDER BY id").fetchall()
    )
    assert [e["type"] for e in events] == ["memory.recorded", "memory.marked_stale"]
    assert events[0]["task_id"] == "T-1"


# -- query ----------------------------------------------------------------------------------------


def _ids(entries: list[MemoryEntry]) -> list[str]:
    return [e.id for e in entries]


def test_overlapping_occurrences_count_non_overlapping(store: Store) -> None:
    _record(store, memory_id="M-a", title="aaaa", body_md="zzz", scope="s", kind="k")
    (hit,) = store.memory.query("aa")
    assert hit.score == 2


def test_score_sums_over_title_body_scope_and_kind(store: Store) -> None:
    _record(store, memory_id="M-a", title="sql", body_md="SQL sql", scope="sql-scope", kind="SQLish")
    (hit,) = store.memory.query("sql")
    assert hit.score == 5


def test_query_is_lowercased_but_not_trimmed(store: Store) -> None:
    _record(store, memory_id="M-a", title="query builder", body_md="x")
    _record(store, memory_id="M-b", title="querybuilder", body_md="x")
    assert _ids(store.memory.query("QUERY BUILDER")) == ["M-a"]
    assert _ids(store.memory.query(" builder")) == ["M-a"]
    assert _ids(store.memory.query("builder ")) == []


def test_unicode_case_folding_matches_python(store: Store) -> None:
    _record(store, memory_id="M-u", title="ÉCOLE Straße", body_md="x")
    assert _ids(store.memory.query("école")) == ["M-u"]
    assert _ids(store.memory.query("STRASSE".lower())) == []


def test_empty_query_scores_importance_and_matches_everything(store: Store) -> None:
    _record(store, memory_id="M-a", importance=10)
    _record(store, memory_id="M-b", importance=90)
    for empty in ("", None, 42, ["x"]):
        found = store.memory.query(empty)
        assert _ids(found) == ["M-b", "M-a"]
        assert [e.score for e in found] == [90, 10]


def test_nonempty_query_omits_zero_scores(store: Store) -> None:
    _record(store, memory_id="M-a", title="alpha")
    _record(store, memory_id="M-b", title="beta")
    assert _ids(store.memory.query("alpha")) == ["M-a"]
    assert store.memory.query("gamma") == []


def test_order_is_score_then_importance_then_id(store: Store) -> None:
    _record(store, memory_id="M-c", title="x x", importance=1)
    _record(store, memory_id="M-b", title="x", importance=5)
    _record(store, memory_id="M-a", title="x", importance=5)
    _record(store, memory_id="M-d", title="x", importance=9)
    assert _ids(store.memory.query("x")) == ["M-c", "M-d", "M-a", "M-b"]


def test_scope_and_kind_filters_are_exact_and_case_sensitive(store: Store) -> None:
    _record(store, memory_id="M-a", scope="project", kind="decision", title="x")
    _record(store, memory_id="M-b", scope="Project", kind="Decision", title="x")
    assert _ids(store.memory.query("x", scope="project")) == ["M-a"]
    assert _ids(store.memory.query("x", scope="Project")) == ["M-b"]
    assert _ids(store.memory.query("x", kind="Decision")) == ["M-b"]
    assert _ids(store.memory.query("x", scope="proj")) == []


def test_limit_default_positive_zero_and_negative(store: Store) -> None:
    for index in range(15):
        _record(store, memory_id=f"M-{index:02d}", title="x")
    assert len(store.memory.query("x")) == 10
    assert len(store.memory.query("x", limit=3)) == 3
    assert len(store.memory.query("x", limit=0)) == 15
    assert len(store.memory.query("x", limit=-1)) == 15


def test_stale_entries_are_included_unless_excluded(store: Store) -> None:
    entry = _record(store, title="x")
    store.memory.mark_stale(memory_id=entry.id, reason_md="old", actor="t")
    (found,) = store.memory.query("x")
    assert found.status == "stale"
    assert store.memory.query("x", exclude_stale=True) == []


def test_ranked_match_uses_fts_any_word(store: Store) -> None:
    _record(store, memory_id="M-a", title="raw sql forbidden", body_md="use the query builder")
    _record(store, memory_id="M-b", title="logging", body_md="structured logs only")
    _record(store, memory_id="M-c", title="unrelated", body_md="nothing")
    found = store.memory.query("sql logs", match="ranked", limit=0)
    assert set(_ids(found)) == {"M-a", "M-b"}
    assert all(isinstance(e.score, float | int) and e.score > 0 for e in found)
    # Updates keep the full-text index in step.
    _record(store, memory_id="M-c", title="sql now", body_md="nothing")
    assert "M-c" in _ids(store.memory.query("sql", match="ranked", limit=0))


def test_ranked_match_folds_diacritics_as_fts5_unicode61_did(store: Store) -> None:
    _record(store, memory_id="M-a", title="Café rules", body_md="naïve caching")
    _record(store, memory_id="M-b", title="cafe", body_md="naive")
    _record(store, memory_id="M-c", title="tea", body_md="nothing")
    assert set(_ids(store.memory.query("CAFE", match="ranked", limit=0))) == {"M-a", "M-b"}
    assert set(_ids(store.memory.query("café naïve", match="ranked", limit=0))) == {"M-a", "M-b"}


def test_ranked_search_answers_the_ranking_function_on_either_backend(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same function, to the bit, on SQLite and PostgreSQL: short prefixes read deeper when
    they cannot settle, entries settled in small blocks, scoped queries answered by the walk (not
    by scoring the scope), and the reference evaluated over the stored text."""
    monkeypatch.setattr(_ranked, "DEPTH", 3)
    monkeypatch.setattr(_ranked, "BLOCK", 2)
    monkeypatch.setattr(_ranked, "NARROW", 0)
    monkeypatch.setattr(_rank_blocks, "SIZE", 2)  # blocks of 2 or 3 postings: writes split them
    monkeypatch.setattr(_rank_blocks, "MOST", 3)
    rng = random.Random(12)
    words = ["cache", "rollback", "Ärger", "straße", "token", "retry", "x_y", "42"]
    for i in range(40):
        _record(
            store,
            memory_id=f"M-{i:02d}",
            scope=rng.choice(["project", "T-1"]),
            kind=rng.choice(["decision", "fact", "summary"]),
            title=" ".join(rng.choices(words, k=rng.randint(1, 4))),
            body_md=" ".join(rng.choices(words, k=rng.randint(1, 12))),
            importance=rng.randint(1, 3),
        )
    for i in range(0, 40, 7):  # rewrites take postings out of the lists and put others in
        _record(store, memory_id=f"M-{i:02d}", title="cache cache", body_md=" ".join(rng.choices(words, k=3)))
    store.memory.mark_stale(memory_id="M-03", reason_md="retry instead", actor="t")
    check_rank_index(store)  # every posting in its block, in order, at its current impact
    rows = store.db.read(
        lambda conn: conn.execute(
            "SELECT id, lc_title, lc_body, lc_scope, lc_kind, importance, scope FROM memory_entries"
        ).fetchall()
    )
    entries = [(row[0], tuple(row[1:5]), row[4] == "summary", int(row[5])) for row in rows]
    for query in ("cache", "rollback cache", "ÄRGER token 42", "x y", "straße retry", "absent"):
        for limit in (1, 3, 10, 0):
            found = store.memory.query(query, match="ranked", limit=limit)
            expected = reference_ranking(entries, query)
            assert [(e.id, e.score) for e in found] == (expected[:limit] if limit else expected), query
        for scopes in ({"T-1"}, {"project"}, {"project", "T-1"}):
            passes = {row[0]: row[6] in scopes for row in rows}
            expected = reference_ranking(entries, query, passes=passes)
            for limit in (2, 5, 0):
                scoped = store.memory.query(
                    query,
                    match="ranked",
                    limit=limit,
                    scope=next(iter(scopes)) if len(scopes) == 1 else None,
                    allowed_scopes=frozenset(scopes) if len(scopes) > 1 else None,
                )
                assert [(e.id, e.score) for e in scoped] == (expected[:limit] if limit else expected)


def test_ranked_match_ignores_fts_syntax(store: Store) -> None:
    _record(store, memory_id="M-a", title='quote " and NEAR( paren', body_md="x")
    assert _ids(store.memory.query('" NEAR( OR', match="ranked")) == ["M-a"]


# -- summarize --------------------------------------------------------------------------------------


def test_summarize_orders_by_importance_and_excludes_only_stale(store: Store) -> None:
    _record(store, memory_id="M-a", importance=10, title="low", body_md="low body")
    _record(store, memory_id="M-b", importance=90, title="high", body_md="high body")
    _record(store, memory_id="M-c", importance=50, title="custom", status="superseded")
    stale = _record(store, memory_id="M-d", importance=99, title="gone")
    store.memory.mark_stale(memory_id=stale.id, reason_md="x", actor="t")
    result = store.memory.summarize().to_dict()
    assert [e["id"] for e in result["entries"]] == ["M-b", "M-c", "M-a"]
    assert result["entry_count"] == 3
    md = result["summary_md"]
    assert md.splitlines()[0] == "## Memory summary: project"
    assert "- **decision**: high" in md and "high body" in md
    assert md.index("high") < md.index("custom") < md.index("low")


def test_summarize_filters_compare_with_scope_and_must_all_match(store: Store) -> None:
    _record(store, memory_id="M-t", scope="T-1", title="task entry")
    _record(store, memory_id="M-p", scope="project", title="project entry")
    by_task = store.memory.summarize(task_id="T-1")
    assert [e.id for e in by_task.entries] == ["M-t"]
    assert by_task.summary_md.startswith("## Memory summary: T-1")
    assert store.memory.summarize(task_id="T-1", proposal_id="P-1").entries == []
    assert store.memory.summarize(task_id="T-1", scope="T-1").entries[0].id == "M-t"
    heading = store.memory.summarize(task_id="T-1", proposal_id="P-1").summary_md.splitlines()[0]
    assert heading == "## Memory summary: P-1"
    assert store.memory.summarize(scope="project").summary_md.startswith("## Memory summary: project")


def test_summarize_is_deterministic(store: Store) -> None:
    for index in range(5):
        _record(store, memory_id=f"M-{index}", importance=50, title=f"t{index}")
    assert store.memory.summarize().summary_md == store.memory.summarize().summary_md


# -- mark_stale -------------------------------------------------------------------------------------


def test_mark_stale_appends_reason_and_repeats(store: Store) -> None:
    entry = _record(store, body_md="Body")
    once = store.memory.mark_stale(memory_id=entry.id, reason_md="first", actor="t")
    assert once.status == "stale"
    assert once.body_md == "Body\n\nStale reason: first"
    twice = store.memory.mark_stale(memory_id=entry.id, reason_md="second", actor="t")
    assert twice.body_md == "Body\n\nStale reason: first\n\nStale reason: second"
    assert twice.revision == 3


def test_mark_stale_on_whitespace_body(store: Store) -> None:
    entry = _record(store, memory_id="M-w", body_md="b")
    store.db.write(lambda c: c.execute("UPDATE memory_entries SET body_md = '  ' WHERE id = 'M-w'"))
    assert (
        store.memory.mark_stale(memory_id=entry.id, reason_md="why", actor="t").body_md == "Marked stale: why"
    )


def test_mark_stale_unknown_and_blank_reason(store: Store) -> None:
    with pytest.raises(NotFound):
        store.memory.mark_stale(memory_id="M-missing", reason_md="x", actor="t")
    entry = _record(store)
    with pytest.raises(InvalidArgument):
        store.memory.mark_stale(memory_id=entry.id, reason_md="   ", actor="t")
    assert store.memory.get(entry.id).status == "active"


def test_record_rejects_bad_input_and_writes_nothing(store: Store) -> None:
    bad: list[dict[str, object]] = [
        {"scope": ""},
        {"title": "   "},
        {"body_md": None},
        {"kind": 5},
        {"title": "x" * 100_000},
        {"body_md": "a\x00b"},
        {"importance": "high"},
        {"importance": True},
        {"importance": 2**70},
        {"source_event_id": -1},
        {"memory_id": "../etc"},
        {"status": ""},
    ]
    for fields in bad:
        with pytest.raises(InvalidArgument):
            _record(store, **fields)
    count = store.db.read(lambda c: c.execute("SELECT count(*) FROM memory_entries").fetchone()[0])
    events = store.db.read(lambda c: c.execute("SELECT count(*) FROM events").fetchone()[0])
    assert (count, events) == (0, 0)


def test_events_are_append_only(store: Store) -> None:
    _record(store)
    with pytest.raises(sqlite3.IntegrityError):
        store.db.connection().execute("DELETE FROM events")
    with pytest.raises(sqlite3.IntegrityError):
        store.db.connection().execute("UPDATE events SET type = 'x'")


@pytest.mark.parametrize("field", ["scope", "kind"])
def test_filters_and_queries_with_an_unpaired_surrogate_are_invalid(store: Store, field: str) -> None:
    with pytest.raises(InvalidArgument, match="surrogate"):
        store.memory.query("x", **{field: "\ud800"})
    with pytest.raises(InvalidArgument, match="surrogate"):
        store.memory.summarize(scope="\ud800")
    with pytest.raises(InvalidArgument, match="surrogate"):
        store.memory.query("a\ud800")
