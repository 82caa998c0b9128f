"""An injected fault for :meth:`store.db.Database.run_inline`: reads that find the database locked.

A real lock that makes a WAL reader busy (recovery, another process in exclusive locking mode)
cannot be produced on demand while the store holds the database open, so the inline connection is
wrapped to answer its reads with SQLite's own busy error. Used only to drive the fallback to a
worker thread; what a read answers is proven on real connections.
"""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest

from store.db import Database

__all__ = ["BusyReads", "busy_inline_reads"]


class BusyReads:
    """A connection whose ``SELECT`` statements raise ``database is locked``."""

    def __init__(self, conn: sqlite3.Connection):
        self._conn = conn
        self.refused = 0

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
        """Refuse a read as a locked database does; run anything else."""
        if sql.lstrip().upper().startswith("SELECT"):
            self.refused += 1
            raise sqlite3.OperationalError("database is locked")
        return self._conn.execute(sql, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


def busy_inline_reads(db: Database, monkeypatch: pytest.MonkeyPatch) -> list[BusyReads]:
    """Make every inline connection ``db`` opens from now on answer busy to reads (the list fills)."""
    made: list[BusyReads] = []
    open_connection = db._open

    def opener(*, inline: bool = False) -> Any:
        conn = open_connection(inline=inline)
        if not inline:
            return conn
        made.append(BusyReads(conn))
        return made[-1]

    monkeypatch.setattr(db, "_open", opener)
    return made
