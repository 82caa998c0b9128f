"""How the HTTP API and the console read entries: by ID, and redacted on the way out.

- :func:`load_memory`: a row by ID on an open connection, or 404 ``memory_not_found`` (an ID that
  is not label-shaped, :func:`store._text.is_label`, cannot exist and is not looked up);
- :func:`memory_view`: the full HTTP projection of an entry, with title, body, tags and
  provenance redacted on the way out (entries recorded over MCP are stored as given);
- :func:`revision_view`: the same for a ``memory_revisions`` row.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from store._text import is_label
from store.errors import MemoryNotFound, NotFound
from store.memory._entry import entry_dict, parse_json_column
from store.memory._redaction import redact, redact_json

__all__ = ["load_memory", "memory_view", "revision_view"]


def load_memory(
    conn: sqlite3.Connection, memory_id: str, *, error: type[NotFound] = MemoryNotFound
) -> sqlite3.Row:
    """The ``memory_entries`` row of ``memory_id``, or ``error`` (404)."""
    row = None
    if is_label(memory_id):
        row = conn.execute("SELECT * FROM memory_entries WHERE id = ?", (memory_id,)).fetchone()
    if row is None:
        raise error(f"memory entry {memory_id!r} does not exist")
    return row  # type: ignore[no-any-return]


def memory_view(row: sqlite3.Row) -> dict[str, Any]:
    """The HTTP projection of an entry: every field, secrets redacted."""
    view = entry_dict(row)
    view["title"] = redact(view["title"])
    view["body_md"] = redact(view["body_md"])
    view["tags"] = redact_json(view["tags"])
    view["provenance"] = redact_json(view["provenance"])
    return view


def revision_view(row: sqlite3.Row) -> dict[str, Any]:
    """The HTTP projection of a ``memory_revisions`` row, redacted."""
    return {
        "id": row["id"],
        "memory_id": row["memory_id"],
        "revision": int(row["revision"]),
        "title": redact(row["title"]),
        "body_md": redact(row["body_md"]),
        "reason": None if row["reason"] is None else redact(row["reason"]),
        "actor": row["actor"],
        "provenance": redact_json(parse_json_column(row["provenance"], {})),
        "created_at": row["created_at"],
    }
