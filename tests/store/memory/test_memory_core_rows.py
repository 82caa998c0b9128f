"""``MemoryStore.query_core`` (what the memory tools answer, built from the rows) is exactly each
entry's ``MemoryEntry.core()`` of ``MemoryStore.query``, in the same order, on every path."""

from __future__ import annotations

from typing import Any

import pytest

from store import Store
from store.errors import InvalidArgument

TLS = {"kind": "forbid_added", "pattern": r"verify\s*=\s*False", "paths": ["app/"], "message": "TLS on."}

CASES: list[dict[str, Any]] = [
    {"query": "tls"},
    {"query": "tls", "limit": 0},
    {"query": "", "limit": 0, "exclude_stale": True},
    {"query": None, "limit": 2},
    {"query": "tls cache", "match": "ranked", "limit": 0},
    {"query": "tls", "match": "ranked", "scope": "T-1"},
    {"query": "ca", "kind": "fact", "limit": 0},
    {"query": "tls", "allowed_scopes": frozenset({"project"})},
    {"query": "tls", "allowed_scopes": frozenset()},
]


@pytest.fixture
def entries(store: Store) -> Store:
    memory = store.memory
    memory.record(
        scope="project", kind="decision", title="TLS ✓", body_md="Stays on: tls.", checks=[TLS], actor="op"
    )
    memory.record(
        scope="T-1", kind="fact", title="Cache tls", body_md="tls tls cache", importance=70, actor="op"
    )
    memory.record(scope="project", kind="summary", title="All", body_md="tls", source_event_id=3, actor="op")
    stale = memory.record(scope="project", kind="fact", title="Old cache", body_md="tls once", actor="op")
    memory.mark_stale(memory_id=stale.id, reason_md="gone", actor="op")
    return store


@pytest.mark.parametrize("arguments", CASES)
def test_query_core_is_the_core_of_each_entry_query_answers(
    entries: Store, arguments: dict[str, Any]
) -> None:
    expected = [entry.core() for entry in entries.memory.query(**arguments)]
    found = entries.memory.query_core(**arguments)
    assert found == expected
    assert [list(entry) for entry in found] == [list(entry) for entry in expected]  # key order too
    assert [type(entry.get("score")) for entry in found] == [type(entry.get("score")) for entry in expected]


def test_query_core_checks_its_arguments_as_query_does(entries: Store) -> None:
    bad: list[dict[str, Any]] = [
        {"limit": "ten"},
        {"exclude_stale": 1},
        {"match": "fuzzy"},
        {"query": "x" * 10_001},
    ]
    for arguments in bad:
        with pytest.raises(InvalidArgument) as via_query:
            entries.memory.query(**arguments)
        with pytest.raises(InvalidArgument) as via_core:
            entries.memory.query_core(**arguments)
        assert via_core.value.message == via_query.value.message
