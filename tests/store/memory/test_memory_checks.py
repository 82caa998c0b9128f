"""Executable checks on memory entries (issue 12, item 2) and summaries ranked last (item 6), in the store."""

from __future__ import annotations

from typing import Any

import pytest

from store import Store
from store.errors import InvalidArgument, InvalidMemory

TLS = {
    "kind": "forbid_added",
    "pattern": r"verify\s*=\s*False",
    "paths": ["app/"],
    "message": "TLS stays on.",
}


def _record(store: Store, **fields: Any) -> Any:
    values: dict[str, Any] = {"scope": "project", "kind": "decision", "title": "TLS", "body_md": "On."}
    values.update(fields)
    return store.memory.record(actor="tester", **values)


def _count(store: Store) -> int:
    return int(store.db.read(lambda conn: conn.execute("SELECT count(*) FROM memory_entries").fetchone()[0]))


def test_checks_are_stored_normalized_and_read_back(store: Store) -> None:
    entry = _record(store, checks=[{**TLS, "paths": [" app/ "], "message": " TLS stays on. "}])
    assert entry.checks == [TLS]
    assert store.memory.get(entry.id).core()["checks"] == [TLS]
    assert store.memory_admin.get(entry.id)["memory"]["checks"] == [TLS]


def test_an_entry_without_checks_answers_as_before(store: Store) -> None:
    entry = _record(store)
    assert "checks" not in entry.core()
    assert store.memory_admin.get(entry.id)["memory"]["checks"] == []


@pytest.mark.parametrize(
    ("checks", "problem"),
    [
        ("verify=False", "checks must be a list"),
        ([TLS] * 21, "at most 20 checks"),
        ([{**TLS, "severity": "high"}], "checks[0]: unknown field(s) severity"),
        ([{**TLS, "kind": "forbid_removed"}], "checks[0].kind must be one of"),
        ([TLS, {**TLS, "pattern": "(unclosed"}], "checks[1].pattern is not a valid regular expression"),
        ([{**TLS, "pattern": "(a+)+$"}], "nests quantifiers"),
        ([{**TLS, "pattern": r"(a)\1"}], "backreference"),
        ([{**TLS, "pattern": "x*"}], "matches the empty string"),
        ([{**TLS, "pattern": "x" * 201}], "longer than 200"),
        ([{**TLS, "paths": "app/"}], "paths must be a list"),
        ([{**TLS, "message": "m" * 501}], "longer than 500"),
        (["verify=False"], "checks[0] must be an object"),
    ],
)
def test_invalid_checks_are_refused_and_nothing_is_written(store: Store, checks: Any, problem: str) -> None:
    before = _count(store)
    with pytest.raises(InvalidArgument) as caught:
        _record(store, checks=checks)
    assert caught.value.code == "invalid_argument"
    assert problem in caught.value.message
    assert _count(store) == before


@pytest.mark.parametrize("kind", ["fact", "note", "summary"])
def test_only_decisions_and_constraints_carry_checks(store: Store, kind: str) -> None:
    with pytest.raises(InvalidArgument, match="only a decision or a constraint may carry checks"):
        _record(store, kind=kind, checks=[TLS])
    assert _record(store, kind="Constraint", checks=[TLS]).checks == [TLS]
    assert _record(store, kind=kind, checks=[]).checks == []


def test_http_create_refuses_with_invalid_memory(store: Store) -> None:
    fields = {"scope": "project", "kind": "fact", "title": "t", "body_md": "b", "checks": [TLS]}
    with pytest.raises(InvalidMemory, match="only a decision or a constraint"):
        store.memory_admin.create(fields, actor="op")
    created = store.memory_admin.create({**fields, "kind": "decision"}, actor="op")
    assert created.body["memory"]["checks"] == [TLS]


def test_a_replacement_keeps_checks_it_omits_and_replaces_those_it_gives(store: Store) -> None:
    entry = _record(store, checks=[TLS])
    assert _record(store, memory_id=entry.id, body_md="Still on.").checks == [TLS]
    other = {"kind": "require_kept", "pattern": "timeout="}
    assert _record(store, memory_id=entry.id, checks=[other]).checks == [
        {**other, "paths": [], "message": ""}
    ]
    assert _record(store, memory_id=entry.id, checks=[]).checks == []


@pytest.mark.parametrize("match", ["substring", "ranked"])
def test_a_decision_outranks_its_own_summary(store: Store, match: str) -> None:
    decision = _record(store, title="Retry budget", body_md="Retry at most three times.", importance=10)
    summary = _record(
        store,
        scope="T-1",
        kind="summary",
        title="MemoryOracle summary: retry retry retry",
        body_md="Retry decisions: retry at most three times (retry budget). Retry, retry.",
        importance=90,
    )
    fact = _record(store, kind="fact", title="retry", body_md="The client retries.", importance=5)
    found = store.memory.query("retry", match=match, limit=0)
    ids = [entry.id for entry in found]
    assert ids[-1] == summary.id and set(ids[:-1]) == {decision.id, fact.id}
    assert [e.id for e in store.memory.query("retry", match=match, limit=1)] != [summary.id]
    # Among summaries the contract's order still holds.
    second = _record(store, scope="T-2", kind="SUMMARY", title="retry", body_md="x", importance=1)
    ids = [entry.id for entry in store.memory.query("retry", match=match, limit=0)]
    assert ids[-2:] == [summary.id, second.id]


def test_the_contract_order_holds_among_entries_that_are_not_summaries(store: Store) -> None:
    low = _record(store, title="cache", body_md="cache", importance=10)
    high = _record(store, title="cache", body_md="cache", importance=90)
    more = _record(store, kind="constraint", title="cache cache", body_md="cache", importance=1)
    assert [e.id for e in store.memory.query("cache", limit=0)] == [more.id, high.id, low.id]


def test_a_merge_keeps_the_checks_of_both_entries(store: Store) -> None:
    other = {"kind": "require_kept", "pattern": "timeout=", "paths": [], "message": ""}
    target = _record(store, checks=[TLS])
    source = _record(store, kind="constraint", title="Timeouts", checks=[other, TLS])
    merged = store.memory_admin.merge(source.id, target.id, actor="op").body["memory"]
    assert merged["checks"] == [TLS, other]
