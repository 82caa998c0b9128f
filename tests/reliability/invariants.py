"""Checks run on a project after a crash or a concurrent run: integrity, acknowledged writes, no half state.

Every check opens its own connection (as a restarted process would), so it sees what is durable:
to the project's SQLite file, or, when ``ROUNDTABLE_STORE_URL`` names a PostgreSQL server, to the
project's schema there (:func:`connect`; the same SQL runs on both through the store's translating
connection). ``find_missing`` returns one line per acknowledged write it could not find; its length
is what the summary reports as ``lost``.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

from store import ProjectPaths
from store.config import load_config
from store.db import ENV_STORE_URL
from store.db._pg_sql import PgConnection, configure_connection
from store.db._postgres import default_schema

__all__ = [
    "LAUNCH_ORDER",
    "backend",
    "connect",
    "find_half_written",
    "find_missing",
    "integrity",
    "on_backend",
    "read_acks",
]

LAUNCH_ORDER = {"requested": 0, "starting": 1, "running": 2, "exited": 3, "failed": 3, "timeout": 3}


def backend() -> str:
    """``postgresql`` when ``ROUNDTABLE_STORE_URL`` is set, else ``sqlite``."""
    return "postgresql" if os.environ.get(ENV_STORE_URL, "").strip() else "sqlite"


def on_backend(name: str) -> str:
    """A summary counter's name for this backend: as it is on SQLite, ``_postgresql`` appended."""
    return name if backend() == "sqlite" else f"{name}_postgresql"


@contextmanager
def connect(project: ProjectPaths) -> Iterator[sqlite3.Connection]:
    """A new autocommit connection to the project's store, on its backend; closed on exit."""
    url = os.environ.get(ENV_STORE_URL, "").strip()
    if not url:
        conn = sqlite3.connect(project.database, isolation_level=None, timeout=15)
        conn.row_factory = sqlite3.Row
        try:
            yield conn
        finally:
            conn.close()
        return
    import psycopg

    schema = load_config(project.config_file).store.schema_name or default_schema(project.root)
    with psycopg.connect(url, autocommit=True) as raw:
        configure_connection(raw, schema, 15_000)
        yield cast("sqlite3.Connection", PgConnection(raw))


def read_acks(path: Path) -> list[dict[str, Any]]:
    """Every complete line of an acknowledgement log (a torn last line was never acknowledged)."""
    if not path.exists():
        return []
    text = path.read_bytes().decode("utf-8", errors="replace")
    return [json.loads(line) for line in text.split("\n")[:-1] if line]


def integrity(project: ProjectPaths) -> list[str]:
    """``PRAGMA integrity_check`` and ``foreign_key_check`` problems (empty when sound). On
    PostgreSQL a killed client cannot damage the server's files and constraints are checked at
    commit, so the check is that the schema still answers a query on every table the workload uses."""
    if backend() == "postgresql":
        with connect(project) as conn:
            for table in ("memory_entries", "proposals", "votes", "capability_grants", "role_launches"):
                conn.execute(f"SELECT count(*) FROM {table}").fetchone()
        return []
    with connect(project) as conn:
        result = [row[0] for row in conn.execute("PRAGMA integrity_check")]
        problems = [] if result == ["ok"] else [f"integrity_check: {result[:5]}"]
        problems += [f"foreign_key_check: {tuple(row)}" for row in conn.execute("PRAGMA foreign_key_check")]
        return problems


def _one(conn: sqlite3.Connection, sql: str, *params: Any) -> sqlite3.Row | None:
    row: sqlite3.Row | None = conn.execute(sql, params).fetchone()
    return row


def _missing_one(conn: sqlite3.Connection, ack: dict[str, Any]) -> str | None:
    op, key = ack["op"], ack.get("id")
    if op == "memory":
        row = _one(conn, "SELECT revision FROM memory_entries WHERE id = ?", key)
        return None if row and row[0] >= ack["revision"] else f"memory {key} r{ack['revision']}"
    if op == "revision":
        row = _one(
            conn, "SELECT 1 FROM memory_revisions WHERE memory_id = ? AND revision = ?", key, ack["revision"]
        )
        return None if row else f"revision {key} r{ack['revision']}"
    if op == "task":
        return None if _one(conn, "SELECT 1 FROM tasks WHERE id = ?", key) else f"task {key}"
    if op in ("proposal", "patch"):
        row = _one(
            conn, "SELECT 1 FROM patch_versions WHERE proposal_id = ? AND version = ?", key, ack["version"]
        )
        return None if row else f"{op} {key} v{ack['version']}"
    if op == "review":
        return (
            None if _one(conn, "SELECT 1 FROM review_rounds WHERE proposal_id = ?", key) else f"review {key}"
        )
    if op == "vote":
        return None if _one(conn, "SELECT 1 FROM votes WHERE id = ?", key) else f"vote {key}"
    if op == "grant":
        return None if _one(conn, "SELECT 1 FROM capability_grants WHERE id = ?", key) else f"grant {key}"
    if op == "grant_revoked":
        row = _one(conn, "SELECT revoked_at FROM capability_grants WHERE id = ?", key)
        return None if row and row[0] else f"revocation of grant {key}"
    if op == "launch":
        row = _one(conn, "SELECT status FROM role_launches WHERE id = ?", key)
        ok = row is not None and LAUNCH_ORDER.get(row[0], -1) >= LAUNCH_ORDER[ack["status"]]
        return None if ok else f"launch {key} {ack['status']}"
    return f"unknown acknowledgement {ack}"


def find_missing(project: ProjectPaths, acks: Iterable[dict[str, Any]]) -> list[str]:
    """The acknowledged writes the store does not hold."""
    with connect(project) as conn:
        return [m for ack in acks if (m := _missing_one(conn, ack)) is not None]


# Event type -> (payload key or column naming the row, table, id column). Both directions must hold.
_EVENT_ROWS = (
    ("memory.recorded", "memory_id", "memory_entries", "id"),
    ("vote.cast", "vote_id", "votes", "id"),
    ("proposal.created", "proposal_id", "proposals", "id"),
    ("capability.granted", "grant_id", "capability_grants", "id"),
    ("role.launch_requested", "launch_id", "role_launches", "id"),
)


def _patch_bytes(conn: sqlite3.Connection, root: Path, row: Any, in_database: bool) -> bytes | None:
    """A patch version's stored bytes: its blob row on PostgreSQL, its file under the root on SQLite."""
    if in_database:
        blob = _one(
            conn,
            "SELECT content FROM patch_blobs WHERE proposal_id = ? AND version = ?",
            row["proposal_id"],
            row["version"],
        )
        return None if blob is None else bytes(blob[0])
    path = root / row["path"]
    return path.read_bytes() if path.is_file() else None


def find_half_written(project: ProjectPaths) -> list[str]:
    """State no committed transaction can leave: rows without files or events, events without rows."""
    root = project.root
    problems: list[str] = []
    with connect(project) as conn:
        in_database = backend() == "postgresql"  # PostgreSQL keeps each version's bytes in patch_blobs
        for row in conn.execute("SELECT proposal_id, version, path, sha256 FROM patch_versions"):
            content = _patch_bytes(conn, root, row, in_database)
            if content is None:
                problems.append(f"patch row {row['proposal_id']} v{row['version']} without its content")
            elif hashlib.sha256(content).hexdigest() != row["sha256"]:
                problems.append(f"patch {row['proposal_id']} v{row['version']} does not match its row")
        for row in conn.execute(
            "SELECT id, status FROM role_launches"
            " WHERE status IN ('starting', 'running') AND container_id IS NULL"
        ):
            problems.append(f"launch {row['id']} {row['status']} without a container id")
        for event_type, key, table, column in _EVENT_ROWS:
            # Sets, not correlated subqueries: the check stays linear as the log grows.
            source = "proposal_id" if key == "proposal_id" else f"json_extract(payload, '$.{key}')"
            named = {
                row[0] for row in conn.execute(f"SELECT {source} FROM events WHERE type = ?", (event_type,))
            }
            rows = {row[0] for row in conn.execute(f"SELECT {column} FROM {table}")}
            problems += [
                f"{event_type} event naming {name} without its {table} row" for name in sorted(named - rows)
            ]
            problems += [
                f"{table} row {name} without its {event_type} event" for name in sorted(rows - named)
            ]
        # Every revision row of an entry up to its current revision, and none beyond it.
        for row in conn.execute(
            "SELECT m.id, m.revision, (SELECT max(revision) FROM memory_revisions r WHERE r.memory_id = m.id)"
            " AS top FROM memory_entries m"
        ):
            if row["top"] is not None and row["top"] != row["revision"]:
                problems.append(
                    f"memory {row['id']} at revision {row['revision']} but revisions reach {row['top']}"
                )
        return problems
