"""Test helpers: snapshots of a project's state, to prove that a refused call changed nothing."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

from store import ProjectPaths, Store
from store._ids import new_id, utc_now_iso

__all__ = ["insert_proposal", "project_snapshot"]


def project_snapshot(paths: ProjectPaths) -> dict[str, object]:
    """Every table's rows plus a hash of every file under ``.roundtable/patches``."""
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
    files = {}
    for path in sorted(Path(paths.patches_dir).rglob("*")):
        if path.is_file():
            files[str(path.relative_to(paths.patches_dir))] = hashlib.sha256(path.read_bytes()).hexdigest()
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
