"""The database connection discipline and the schema's migrations, on SQLite or PostgreSQL.

:class:`Database` is the only place that opens the SQLite file: WAL, ``synchronous=FULL``,
``BEGIN IMMEDIATE`` writes with bounded retries. ``PostgresDatabase`` (``store.db._postgres``) is
the same interface over PostgreSQL. :func:`open_database` opens the one a project is configured
for (``[store] url``, ``ROUNDTABLE_STORE_URL``). Migrations live in ``schema/NNNN_name.sql`` and,
with the same names, ``pg_schema/NNNN_name.sql``.
"""

from __future__ import annotations

from store.db._connection import Database
from store.db._migrations import apply_migrations
from store.db._open import open_database
from store.db._url import ENV_STORE_URL, PostgresUrl, parse_store_url

__all__ = ["ENV_STORE_URL", "Database", "PostgresUrl", "apply_migrations", "open_database", "parse_store_url"]
