"""With ``ROUNDTABLE_STORE_URL`` at PostgreSQL, a command-line flow's rows live there, not in a file.

The commands run in subprocesses that inherit the environment, as an outside suite's would; the
rows are then read straight from the backend (the project's schema, or its SQLite file), not
through the store, so a store that quietly fell back to SQLite would fail here.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
from typing import Any

from store import ProjectPaths
from store.db import ENV_STORE_URL
from store.db._postgres import default_schema

_QUERIES = {
    "tasks": "SELECT id FROM tasks",
    "memories": "SELECT title FROM memory_entries",
    "events": "SELECT type FROM events",
}


def _rows(project: ProjectPaths, backend: str) -> dict[str, set[str]]:
    if backend == "postgresql":
        import psycopg

        schema = default_schema(project.root)
        with psycopg.connect(os.environ[ENV_STORE_URL]) as pg:
            pg.execute(f'SET search_path TO "{schema}"')
            return {name: {row[0] for row in pg.execute(sql)} for name, sql in _QUERIES.items()}
    lite = sqlite3.connect(f"file:{project.database}?mode=ro", uri=True)
    try:
        return {name: {row[0] for row in lite.execute(sql)} for name, sql in _QUERIES.items()}
    finally:
        lite.close()


def test_a_cli_flow_writes_its_rows_to_the_configured_backend(
    project: ProjectPaths, store_backend: str, roundtable_argv: list[str]
) -> None:
    def cli(*args: str) -> dict[str, Any]:
        done = subprocess.run(
            [*roundtable_argv, "--json", "--root", str(project.root), *args],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        answer: dict[str, Any] = json.loads(done.stdout)
        return answer

    task = cli("task", "create", "--title", "Where do rows live?")["task"]
    cli("memory", "record", "--scope", "project", "--kind", "decision", "--title", "Here", "--body-md", "b")
    rows = _rows(project, store_backend)
    assert task["id"] in rows["tasks"] and "Here" in rows["memories"]
    assert {"task.created", "memory.recorded"} <= rows["events"]
    files = {path.name for path in project.state_dir.glob("roundtable.db*")}
    if store_backend == "postgresql":
        assert not files, f"a SQLite file beside a PostgreSQL store: {files}"
    else:
        assert "roundtable.db" in files
