"""Revision history of memory entries: revise, list revisions, and a real diff between two.

Fixed against the seed:

- the expected revision is enforced by the ``UPDATE`` itself (``WHERE id = ? AND revision = ?``,
  then the row count), not by a read before it, so no interleaving can slip a second writer
  through; a mismatch is 409 ``memory_revision_conflict``;
- the history keeps the title and the given reason of each revision (the seed dropped the reason
  and never snapshotted titles); a new title is redacted like the body;
- the diff is a unified diff (``difflib``) of the title and the body between two stored
  revisions, with ``latest`` accepted and 404 ``revision_not_found`` for any other label that
  names no stored revision (the seed echoed the labels and the current body, always "changed").
"""

from __future__ import annotations

import difflib
import re
import sqlite3
from collections.abc import Callable, Mapping
from typing import Any

from store._ids import utc_now_iso
from store._text import check_text
from store.errors import InvalidExpectedRevision, InvalidRevision, MemoryRevisionConflict, RevisionNotFound
from store.memory._new_entry import MAX_BODY_CHARS, MAX_TITLE_CHARS
from store.memory._rank_index import index_entries
from store.memory._redaction import redact
from store.memory._views import load_memory, memory_view, revision_view
from store.memory._write import record_change, revision_row

__all__ = ["diff_revisions", "list_revisions", "prepare_revision", "unified_diff"]

MAX_REASON_CHARS = 2_000
_REVISION_LABEL = re.compile(r"[1-9][0-9]{0,9}")


def prepare_revision(
    memory_id: str, fields: Mapping[str, Any], *, actor: str
) -> Callable[[sqlite3.Connection], dict[str, Any]]:
    """Validate a revision request; returns the mutation that writes it.

    ``{body_md, title?, reason?, expected_revision}``: a blank body is ``invalid_revision``; an
    expected revision that is not a positive integer is ``invalid_expected_revision``.
    """
    unknown = sorted(set(fields) - {"body_md", "title", "reason", "expected_revision"})
    if unknown:
        raise InvalidRevision(f"unknown field(s): {', '.join(unknown)}")
    body = redact(check_text("body_md", fields.get("body_md"), limit=MAX_BODY_CHARS, error=InvalidRevision))
    title_in = fields.get("title")
    title = None
    if title_in is not None and title_in != "":
        title = redact(check_text("title", title_in, limit=MAX_TITLE_CHARS, error=InvalidRevision))
    reason_in = fields.get("reason")
    reason = None
    if reason_in is not None and reason_in != "":
        reason = check_text("reason", reason_in, limit=MAX_REASON_CHARS, error=InvalidRevision)
    expected = fields.get("expected_revision")
    if isinstance(expected, bool) or not isinstance(expected, int) or not 1 <= expected <= 2**62:
        raise InvalidExpectedRevision("expected_revision must be a positive integer")

    def mutation(conn: sqlite3.Connection) -> dict[str, Any]:
        return _revise(conn, memory_id, body=body, title=title, reason=reason, expected=expected, actor=actor)

    return mutation


def _revise(
    conn: sqlite3.Connection,
    memory_id: str,
    *,
    body: str,
    title: str | None,
    reason: str | None,
    expected: int,
    actor: str,
) -> dict[str, Any]:
    now = utc_now_iso()
    updated = conn.execute(
        "UPDATE memory_entries SET body_md = ?, lc_body = ?, title = COALESCE(?, title),"
        " lc_title = COALESCE(?, lc_title), revision = revision + 1, updated_at = ?"
        " WHERE id = ? AND revision = ?",
        (body, body.lower(), title, None if title is None else title.lower(), now, memory_id, expected),
    )
    if updated.rowcount != 1:
        current = load_memory(conn, memory_id)  # 404 when it does not exist at all
        raise MemoryRevisionConflict(
            f"memory entry {memory_id} is at revision {current['revision']}, not {expected}; "
            "read it again and retry",
            details={"current_revision": int(current["revision"])},
        )
    index_entries(conn, [memory_id])
    row = load_memory(conn, memory_id)
    revision = int(row["revision"])
    revision_row(
        conn,
        memory_id,
        revision,
        title=row["title"],
        body_md=body,
        reason=reason,
        actor=actor,
        now=now,
        provenance={"via": "http", "expected_revision": expected, "reason": reason},
    )
    record_change(
        conn,
        "memory.revised",
        actor=actor,
        memory_id=memory_id,
        scope=row["scope"],
        payload={"revision": revision, "reason": reason, "title_changed": title is not None},
    )
    return {"memory": memory_view(row), "revision": revision_view(_revision(conn, memory_id, revision))}


def _revision(conn: sqlite3.Connection, memory_id: str, revision: int) -> sqlite3.Row:
    row = conn.execute(
        "SELECT * FROM memory_revisions WHERE memory_id = ? AND revision = ?", (memory_id, revision)
    ).fetchone()
    if row is None:
        raise RevisionNotFound(f"memory entry {memory_id} has no revision {revision}")
    return row  # type: ignore[no-any-return]


def list_revisions(conn: sqlite3.Connection, memory_id: str) -> dict[str, Any]:
    """``{"items"}``: every stored revision, by revision number, revision 1 included."""
    load_memory(conn, memory_id)
    rows = conn.execute(
        "SELECT * FROM memory_revisions WHERE memory_id = ? ORDER BY revision", (memory_id,)
    ).fetchall()
    return {"items": [revision_view(row) for row in rows]}


def _resolve_label(conn: sqlite3.Connection, memory_id: str, label: str) -> sqlite3.Row:
    text = label.strip()
    if text == "latest":
        row = conn.execute(
            "SELECT * FROM memory_revisions WHERE memory_id = ? ORDER BY revision DESC LIMIT 1", (memory_id,)
        ).fetchone()
        if row is None:
            raise RevisionNotFound(f"memory entry {memory_id} has no stored revisions")
        return row  # type: ignore[no-any-return]
    if not _REVISION_LABEL.fullmatch(text):
        raise RevisionNotFound(f"{label!r} names no revision; use a revision number or 'latest'")
    return _revision(conn, memory_id, int(text))


def unified_diff(old: str, new: str, *, old_label: str, new_label: str) -> str:
    """A unified diff of two texts, line by line; empty when they are equal."""
    lines = difflib.unified_diff(
        old.splitlines(), new.splitlines(), fromfile=old_label, tofile=new_label, lineterm=""
    )
    text = "\n".join(lines)
    return text + "\n" if text else ""


def diff_revisions(
    conn: sqlite3.Connection, memory_id: str, from_label: str, to_label: str
) -> dict[str, Any]:
    """``{"from", "to", "changed", "title_changed", "body_changed", "diff"}`` between two revisions."""
    load_memory(conn, memory_id)
    old, new = _resolve_label(conn, memory_id, from_label), _resolve_label(conn, memory_id, to_label)
    a, b = int(old["revision"]), int(new["revision"])
    old_title, new_title = redact(old["title"]), redact(new["title"])
    old_body, new_body = redact(old["body_md"]), redact(new["body_md"])
    title_diff = unified_diff(
        old_title, new_title, old_label=f"a/{memory_id}@r{a}/title", new_label=f"b/{memory_id}@r{b}/title"
    )
    body_diff = unified_diff(
        old_body, new_body, old_label=f"a/{memory_id}@r{a}/body_md", new_label=f"b/{memory_id}@r{b}/body_md"
    )
    return {
        "memory_id": memory_id,
        "from": a,
        "to": b,
        "changed": bool(title_diff or body_diff),
        "title_changed": bool(title_diff),
        "body_changed": bool(body_diff),
        "diff": title_diff + body_diff,
        "from_revision": revision_view(old),
        "to_revision": revision_view(new),
    }
