"""The SQLite connection discipline and the schema's migrations.

:class:`Database` is the only place that opens the database: WAL, ``synchronous=FULL``,
``BEGIN IMMEDIATE`` writes with bounded retries. Migrations live in ``schema/NNNN_name.sql``.
"""

from __future__ import annotations

from store.db._connection import Database
from store.db._migrations import apply_migrations

__all__ = ["Database", "apply_migrations"]
