"""Reading the event log forward, for ``GET /events`` and the live stream.

The stream's single poller calls :meth:`EventFeed.after` on an indexed range (``id > ?``), so
the cost of a poll depends on what is new, not on the size of the log.
"""

from __future__ import annotations

import sqlite3

from store._text import check_int
from store.db import Database
from store.events._log import Event, list_events

__all__ = ["MAX_EVENT_PAGE", "EventFeed"]

MAX_EVENT_PAGE = 500


class EventFeed:
    """Forward reads of the event log; blocking (call through ``Database.run``)."""

    def __init__(self, db: Database):
        self.db = db

    def after(
        self,
        after: int = 0,
        *,
        limit: int = 100,
        proposal_id: str | None = None,
        types: tuple[str, ...] = (),
    ) -> list[Event]:
        """Events with ``id > after``, oldest first, at most ``limit``."""
        check_int("after", after, minimum=0)
        check_int("limit", limit, minimum=1, maximum=MAX_EVENT_PAGE)
        return self.db.read(
            lambda conn: list_events(conn, after=after, limit=limit, proposal_id=proposal_id, types=types)
        )

    def last_id(self) -> int:
        """The ID of the newest event (0 when the log is empty)."""

        def read(conn: sqlite3.Connection) -> int:
            return int(conn.execute("SELECT COALESCE(MAX(id), 0) FROM events").fetchone()[0])

        return self.db.read(read)
