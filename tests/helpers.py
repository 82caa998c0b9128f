"""Test helpers: snapshots of a project's state, to prove that a refused call changed nothing."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

from store import ProjectPaths

__all__ = ["project_snapshot"]


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
