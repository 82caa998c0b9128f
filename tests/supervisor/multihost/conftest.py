"""The two-host test's PostgreSQL server: the store suite's (``ROUNDTABLE_TEST_PG_URL``, or a
throwaway one started for the session)."""

from __future__ import annotations

from tests.store.conftest import pg_url

__all__ = ["pg_url"]
