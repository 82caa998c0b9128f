"""What the ranked search reads of an entry to place and filter it (``memory_rank_info``, migration
0015) stays equal to the entry's own columns through every kind of write, on both backends, and is
filled from the entries of a project indexed before the migration.

The walk reads only that table for an entry's scope, kind, status, importance and whether it is a
summary; a write that changed one of them without it would leave ranked answers filtering and
ordering by the old value. Each test checks the table against the join it replaced
(:func:`~tests.store.memory.helpers.check_rank_index`) and the walk's answers, filtered on the
column the write changed, against the reference ranking.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from store import ProjectPaths, Store, open_store
from store.memory import MemoryEntry, _ranked
from tests.store.memory.helpers import check_rank_index, expected_ranking


def _record(store: Store, **fields: Any) -> MemoryEntry:
    values: dict[str, Any] = {"scope": "project", "kind": "decision", "title": "wombat", "body_md": "b"}
    return store.memory.record(actor="op", **{**values, **fields})


def _replace(store: Store, memory_id: str) -> None:
    _record(store, memory_id=memory_id, scope="T-9", kind="Summary", importance=9, title="wombat moved")


def _status_only(store: Store, memory_id: str) -> None:
    # the same text: the ranked index's own lists and terms do not change, only the columns
    _record(store, memory_id=memory_id, status="archived")


def _importance_only(store: Store, memory_id: str) -> None:
    _record(store, memory_id=memory_id, importance=1)


def _mark_stale(store: Store, memory_id: str) -> None:
    store.memory.mark_stale(memory_id=memory_id, reason_md="superseded", actor="op")


def _revise(store: Store, memory_id: str) -> None:
    fields = {"title": "wombat revised", "body_md": "b", "expected_revision": 1}
    store.memory_admin.revise(memory_id, fields, actor="op")


def _merge(store: Store, memory_id: str) -> None:
    other = _record(store, title="wombat twin", kind="fact")
    store.memory_admin.merge(memory_id, other.id, actor="op")


def _archive_restore(store: Store, memory_id: str) -> None:
    store.memory_admin.act(memory_id, "archive", actor="op")
    check_rank_index(store)
    store.memory_admin.act(memory_id, "restore", actor="op")


_WRITES: dict[str, Callable[[Store, str], None]] = {
    fn.__name__.lstrip("_"): fn
    for fn in (_replace, _status_only, _importance_only, _mark_stale, _revise, _merge, _archive_restore)
}

_FILTERS: list[dict[str, Any]] = [
    {},
    {"scope": "T-9"},
    {"scope": "project"},
    {"kind": "Summary"},
    {"kind": "decision"},
    {"exclude_stale": True},
    {"allowed_scopes": frozenset({"T-9"})},
]


@pytest.mark.parametrize("write", list(_WRITES))
def test_every_write_keeps_what_the_walk_reads_equal_to_the_entry(
    store: Store, write: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_ranked, "NARROW", 0)  # the walk itself, never the narrow-scope evaluation
    store.memory.record_many(
        [{"scope": "project", "kind": "fact", "title": f"wombat {i}", "body_md": "b"} for i in range(6)],
        actor="op",
    )
    entry = _record(store, title="wombat wombat", importance=5)
    check_rank_index(store)
    _WRITES[write](store, entry.id)
    check_rank_index(store)
    for options in _FILTERS:
        found = [(e.id, e.score) for e in store.memory.query("wombat", match="ranked", **options)]
        assert found == expected_ranking(store, "wombat", options), options


_TRIGGERS = ("insert", "delete", "update", "entry_delete")


def _before_0015(conn: Any) -> None:
    """Take migration 0015 back out of a project's schema, so that its next open applies it again."""
    if getattr(conn, "backend", "sqlite") == "postgresql":
        for name in _TRIGGERS:  # each trigger goes with its function
            conn.execute(f"DROP FUNCTION memory_rank_info_{name}() CASCADE")
    else:
        for name in _TRIGGERS:
            conn.execute(f"DROP TRIGGER memory_rank_info_{name}")
    conn.execute("DROP TABLE memory_rank_info")
    conn.execute("DELETE FROM schema_migrations WHERE name = '0015_memory_rank_info'")


def test_a_project_indexed_before_the_migration_has_it_filled_when_it_opens(project: ProjectPaths) -> None:
    old = open_store(project)
    old.db.write(_before_0015)
    entries = [
        {"scope": ("project", "T-1")[i % 2], "kind": ("fact", "summary")[i % 3 == 0], "title": "wombat"}
        for i in range(9)
    ]
    old.memory.record_many(
        [entry | {"body_md": f"x{i} " * (i + 1), "importance": i % 4} for i, entry in enumerate(entries)],
        actor="op",
    )
    stale = old.memory.query("wombat", limit=1)[0].id
    old.memory.mark_stale(memory_id=stale, reason_md="old", actor="op")
    old.close()
    upgraded = open_store(project)  # applies 0015: the table is filled from the entries
    try:
        check_rank_index(upgraded)
        for options in ({"limit": 0}, {"scope": "T-1"}, {"kind": "summary"}, {"exclude_stale": True}):
            found = [(e.id, e.score) for e in upgraded.memory.query("wombat", match="ranked", **options)]
            assert found == expected_ranking(upgraded, "wombat", options), options
    finally:
        upgraded.close()


def test_entries_taken_out_of_the_index_leave_nothing_behind(store: Store) -> None:
    """An entry deleted (the store deletes none; a test or an operator's SQL may) places nowhere
    at once, before the index forgets it; a row of ``memory_rank_docs`` deleted (as 0013's rebuild
    did) takes its row here with it."""
    gone, dropped, kept = (_record(store, title=f"wombat {i}").id for i in range(3))

    def delete(conn: Any) -> None:
        for table in ("memory_revisions", "memory_provenance_edges"):  # what refers to the entry
            conn.execute(f"DELETE FROM {table} WHERE memory_id = ?", (gone,))
        conn.execute("DELETE FROM memory_entries WHERE id = ?", (gone,))
        conn.execute("DELETE FROM memory_rank_docs WHERE id = ?", (dropped,))

    store.db.write(delete)
    held = store.db.read(lambda conn: conn.execute("SELECT id FROM memory_rank_info").fetchall())
    assert [row[0] for row in held] == [kept]
