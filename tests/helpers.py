"""Test helpers: snapshots of a project's state, to prove that a refused call changed nothing."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

from store import ProjectPaths, Store
from store._ids import new_id, utc_now_iso

__all__ = ["insert_proposal", "project_snapshot"]


def _postgres_tables(paths: ProjectPaths) -> dict[str, object] | None:
    """Every table's rows of the project's PostgreSQL schema, or ``None`` when it uses SQLite."""
    from store.db import parse_store_url

    config = paths.load_config()
    url = parse_store_url(config.store.url)
    if url is None:
        return None
    import psycopg

    from store.db._postgres import default_schema

    schema = config.store.schema_name or default_schema(paths.root)
    with psycopg.connect(**url.connect_kwargs()) as conn:
        tables = [
            str(row[0])
            for row in conn.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = %s ORDER BY 1",
                (schema,),
            )
        ]
        return {
            table: sorted(map(repr, conn.execute(f'SELECT * FROM "{schema}"."{table}"').fetchall()))
            for table in tables
        }


def project_snapshot(paths: ProjectPaths) -> dict[str, object]:
    """Every table's rows plus a hash of every file under ``.roundtable/patches``.

    The tables are read from the store the project is configured for: its SQLite file, or its
    schema in PostgreSQL (``ROUNDTABLE_STORE_URL``, tests/store/conftest.py).
    """
    files = {}
    for path in sorted(Path(paths.patches_dir).rglob("*")):
        if path.is_file():
            files[str(path.relative_to(paths.patches_dir))] = hashlib.sha256(path.read_bytes()).hexdigest()
    in_postgres = _postgres_tables(paths)
    if in_postgres is not None:
        return {**in_postgres, "__patches__": files}
    conn = sqlite3.connect(f"file:{paths.database}?mode=ro", uri=True)
    try:
        tables = [
            row[0]
            for row in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
                " AND name NOT LIKE 'memory_fts%' ORDER BY name"
            )
        ]
        snapshot: dict[str, object] = {
            table: sorted(map(repr, conn.execute(f'SELECT * FROM "{table}"').fetchall())) for table in tables
        }
    finally:
        conn.close()
    snapshot["__patches__"] = files
    return snapshot


def insert_proposal(store: Store, *, status: str = "in_review") -> tuple[str, str]:
    """A task and a proposal on it, written straight into their tables (no patch file)."""
    task_id, proposal_id, now = new_id("task"), new_id("proposal"), utc_now_iso()

    def write(conn: sqlite3.Connection) -> None:
        conn.execute(
            "INSERT INTO tasks (id, title, created_by, created_at, updated_at) VALUES (?, 't', 'op', ?, ?)",
            (task_id, now, now),
        )
        conn.execute(
            "INSERT INTO proposals (id, task_id, agent_id, title, status, created_by, created_at, updated_at)"
            " VALUES (?, ?, 'implementer-1', 'p', ?, 'op', ?, ?)",
            (proposal_id, task_id, status, now, now),
        )

    store.db.write(write)
    return task_id, proposal_id
