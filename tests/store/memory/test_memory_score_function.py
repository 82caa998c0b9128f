"""The substring score's SQL function is defined once per connection, not before every search:
defining one expires every statement SQLite has prepared on the connection."""

from __future__ import annotations

import sqlite3
from typing import Any

from store import Store
from store.memory._query import search
from store.memory._search import SCORE_FUNCTION, MemoryFilter

_ALL = MemoryFilter(None, None, None, False, 0)


class _Counting(sqlite3.Connection):
    """A connection that counts the SQL functions defined on it."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.defined: list[str] = []

    def create_function(self, name: str, *args: Any, **kwargs: Any) -> None:
        self.defined.append(name)
        super().create_function(name, *args, **kwargs)


def test_the_score_function_is_defined_on_first_use_only(shared_store: Store) -> None:
    store = shared_store
    store.memory.record(scope="project", kind="fact", title="Cache", body_md="cache the cache", actor="op")
    conn = sqlite3.connect(store.db.path, factory=_Counting)
    try:
        answers = [search(conn, "cache", _ALL) for _ in range(3)]
        assert search(conn, "", _ALL) == search(conn, "", _ALL)  # no needle: no function at all
    finally:
        conn.close()
    assert conn.defined == [SCORE_FUNCTION]
    assert answers[0] == answers[1] == answers[2] == store.memory.query("cache", limit=0)
    assert [entry.score for entry in answers[0]] == [3]
