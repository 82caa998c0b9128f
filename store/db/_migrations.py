"""Named, ordered schema migrations, recorded in ``schema_migrations``.

Each migration is a file ``store/schema/NNNN_name.sql`` applied in its own ``BEGIN IMMEDIATE``
transaction together with its ``schema_migrations`` row, so a migration is applied whole or not
at all. Two processes starting at once serialise on the write lock; the second finds the row the
first committed and skips the migration.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from importlib import resources

from store._ids import utc_now_iso

__all__ = ["Migration", "apply_migrations", "load_migrations"]


@dataclass(frozen=True)
class Migration:
    """One schema step: its name (the file stem) and its SQL statements."""

    name: str
    statements: tuple[str, ...]


def _split_statements(sql: str) -> tuple[str, ...]:
    """Split a script into complete statements (``executescript`` would commit on its own)."""
    statements: list[str] = []
    pending = ""
    for line in sql.splitlines(keepends=True):
        pending += line
        if sqlite3.complete_statement(pending):
            text = pending.strip()
            if text and not all(part.strip().startswith("--") for part in text.splitlines()):
                statements.append(text)
            pending = ""
    if pending.strip() and not all(p.strip().startswith("--") or not p.strip() for p in pending.splitlines()):
        raise ValueError(f"incomplete SQL statement at the end of a migration: {pending[:80]!r}")
    return tuple(statements)


def load_migrations() -> list[Migration]:
    """Every migration shipped in ``store/schema``, in name order."""
    folder = resources.files("store.db") / "schema"
    found = sorted(
        (entry.name, entry.read_text(encoding="utf-8"))
        for entry in folder.iterdir()
        if entry.name.endswith(".sql")
    )
    return [Migration(name.removesuffix(".sql"), _split_statements(sql)) for name, sql in found]


def apply_migrations(conn: sqlite3.Connection) -> list[str]:
    """Apply every migration not yet recorded; returns the names applied now."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)"
        )
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
    applied: list[str] = []
    for migration in load_migrations():
        conn.execute("BEGIN IMMEDIATE")
        try:
            done = conn.execute(
                "SELECT 1 FROM schema_migrations WHERE name = ?", (migration.name,)
            ).fetchone()
            if done is None:
                for statement in migration.statements:
                    conn.execute(statement)
                conn.execute(
                    "INSERT INTO schema_migrations (name, applied_at) VALUES (?, ?)",
                    (migration.name, utc_now_iso()),
                )
                applied.append(migration.name)
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
    return applied
