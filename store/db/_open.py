"""Opening the store a project is configured for: its SQLite file, or its PostgreSQL schema."""

from __future__ import annotations

from pathlib import Path

from store.db._connection import Database
from store.db._url import parse_store_url

__all__ = ["open_database"]


def open_database(*, url: str, schema: str, sqlite_path: Path, root: Path) -> Database:
    """The migrated database of a project: ``ROUNDTABLE_STORE_URL`` or ``url`` selects the backend.

    A malformed URL, an unreachable server or refused credentials raise before anything is
    created (no SQLite file, no schema), with a message that names the host and database only.
    """
    pg_url = parse_store_url(url)
    db: Database
    if pg_url is None:
        db = Database(sqlite_path)
    else:
        from store.db._postgres import PostgresDatabase, default_schema  # psycopg only when asked for

        db = PostgresDatabase(pg_url, schema or default_schema(root))
    try:
        db.migrate()
    except BaseException:
        db.close()
        raise
    return db
