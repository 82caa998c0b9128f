"""State actions on memory entries (pin, unpin, archive, restore) and resynthesis.

Each action is one ``UPDATE`` whose ``WHERE`` clause is the action's permitted prior state, so the
check and the change are one statement; a row count of 0 means 404 or 409
``memory_update_conflict``. The table (the seed had none: restore revived even merged entries):

=========  ===========================================  =========================================
action     permitted prior state                         effect
=========  ===========================================  =========================================
pin        status not ``archived``/``merged``, unpinned  ``pinned`` set
unpin      pinned                                         ``pinned`` cleared
archive    status not ``archived``/``merged``             status ``archived`` (prior status kept)
restore    status ``archived``                            the status it had before archiving
=========  ===========================================  =========================================

Resynthesis (the seed set a flag nothing read): :func:`request_resynthesis_in` records a request
(``requested``); :func:`fulfil_resynthesis` runs a synthesizer on the entry and its history
outside any transaction, then commits the new body as a revision and moves the request to
``completed``, or to ``failed`` with the error. :func:`lexical_resynthesis` is the deterministic
synthesizer of the ``lexical`` provider: no model, a cleaned-up body.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from store._ids import new_id, utc_now_iso
from store.db import Database
from store.errors import Conflict, MemoryResynthesisConflict, MemoryUpdateConflict, ResynthesisRequestNotFound
from store.memory._entry import entry_dict
from store.memory._rank_index import index_entries
from store.memory._redaction import redact
from store.memory._views import load_memory, memory_view
from store.memory._write import record_change, revision_row

__all__ = [
    "ACTIONS",
    "Synthesizer",
    "act_in",
    "fulfil_resynthesis",
    "lexical_resynthesis",
    "request_resynthesis_in",
    "resynthesis_view",
]


@dataclass(frozen=True)
class _Action:
    allowed: str  # SQL condition on the current row: the permitted prior state
    change: str  # SQL SET clause (right-hand sides see the old row)
    event: str
    explain: str


ACTIONS: dict[str, _Action] = {
    "pin": _Action(
        "status NOT IN ('archived', 'merged') AND pinned = 0",
        "pinned = 1",
        "memory.pinned",
        "pin applies to an unpinned entry that is neither archived nor merged",
    ),
    "unpin": _Action("pinned = 1", "pinned = 0", "memory.unpinned", "unpin applies to a pinned entry"),
    "archive": _Action(
        "status NOT IN ('archived', 'merged')",
        "status_before_archive = status, status = 'archived', archived_at = :now",
        "memory.archived",
        "archive applies to an entry that is neither archived nor merged",
    ),
    "restore": _Action(
        "status = 'archived'",
        "status = COALESCE(status_before_archive, 'active'), status_before_archive = NULL,"
        " archived_at = NULL",
        "memory.restored",
        "restore applies only to an archived entry",
    ),
}
"""The permitted-prior-state table (see the module docstring)."""


def act_in(conn: sqlite3.Connection, *, memory_id: str, action: str, actor: str) -> dict[str, Any]:
    """Apply one state action; 409 ``memory_update_conflict`` outside its permitted prior state."""
    spec = ACTIONS[action]
    now = utc_now_iso()
    updated = conn.execute(
        f"UPDATE memory_entries SET {spec.change}, updated_at = :now WHERE id = :id AND ({spec.allowed})",
        {"now": now, "id": memory_id},
    )
    if updated.rowcount != 1:
        row = load_memory(conn, memory_id)
        raise MemoryUpdateConflict(
            f"cannot {action} memory entry {memory_id}: it is {row['status']}"
            f"{', pinned' if row['pinned'] else ''}; {spec.explain}"
        )
    row = load_memory(conn, memory_id)
    record_change(
        conn,
        spec.event,
        actor=actor,
        memory_id=memory_id,
        scope=row["scope"],
        payload={"action": action, "status": row["status"], "pinned": bool(row["pinned"])},
        action=f"memory.{action}",
    )
    return {"memory": memory_view(row)}


# -- resynthesis -----------------------------------------------------------------------------------


def resynthesis_view(row: sqlite3.Row) -> dict[str, Any]:
    """The JSON shape of a resynthesis request."""
    return dict(row)


def _request_row(conn: sqlite3.Connection, request_id: str) -> sqlite3.Row:
    row = conn.execute("SELECT * FROM memory_resynthesis_requests WHERE id = ?", (request_id,)).fetchone()
    if row is None:
        raise ResynthesisRequestNotFound(f"resynthesis request {request_id} does not exist")
    return row  # type: ignore[no-any-return]


def request_resynthesis_in(
    conn: sqlite3.Connection, *, memory_id: str, reason: str | None, actor: str
) -> dict[str, Any]:
    """Record a resynthesis request.

    409 ``memory_resynthesis_conflict`` when one is already open or the entry is archived or merged.
    """
    row = load_memory(conn, memory_id)
    if row["status"] in ("archived", "merged"):
        raise MemoryResynthesisConflict(
            f"memory entry {memory_id} is {row['status']}; only live entries are resynthesized"
        )
    open_request = conn.execute(
        "SELECT id FROM memory_resynthesis_requests WHERE memory_id = ? AND status = 'requested'",
        (memory_id,),
    ).fetchone()
    if open_request is not None:
        raise MemoryResynthesisConflict(
            f"memory entry {memory_id} already has an open resynthesis request ({open_request['id']})"
        )
    request_id, now = new_id("RS"), utc_now_iso()
    conn.execute(
        "INSERT INTO memory_resynthesis_requests (id, memory_id, status, reason, base_revision, requested_by,"
        " requested_at) VALUES (?, ?, 'requested', ?, ?, ?, ?)",
        (request_id, memory_id, reason, int(row["revision"]), actor, now),
    )
    conn.execute(
        "UPDATE memory_entries SET resynthesis_status = 'requested', updated_at = ? WHERE id = ?",
        (now, memory_id),
    )
    record_change(
        conn,
        "memory.resynthesis_requested",
        actor=actor,
        memory_id=memory_id,
        scope=row["scope"],
        payload={"request_id": request_id, "reason": reason},
    )
    return {
        "request": resynthesis_view(_request_row(conn, request_id)),
        "memory": memory_view(load_memory(conn, memory_id)),
    }


Synthesizer = Callable[[dict[str, Any], list[dict[str, Any]]], str]
"""``(entry, revisions) -> new body``: the entry and its history as plain dicts, oldest first."""


def fulfil_resynthesis(
    db: Database, request_id: str, synthesize: Synthesizer, *, provider: str, actor: str
) -> dict[str, Any]:
    """Fulfil one open request through ``synthesize``; returns the request as it ends.

    The synthesizer runs outside any transaction (it may call a model). Its body is committed as a
    new revision only if the entry is still at the revision it was given; otherwise, or when it
    raises or answers blank, the request fails with the reason and the entry is unchanged.
    """

    def read(conn: sqlite3.Connection) -> tuple[sqlite3.Row, dict[str, Any], list[dict[str, Any]]]:
        request = _request_row(conn, request_id)
        if request["status"] != "requested":
            raise Conflict(f"resynthesis request {request_id} is already {request['status']}")
        entry = entry_dict(load_memory(conn, request["memory_id"]))
        history = [
            {key: r[key] for key in ("revision", "title", "body_md", "reason", "actor", "created_at")}
            for r in conn.execute(
                "SELECT * FROM memory_revisions WHERE memory_id = ? ORDER BY revision", (entry["id"],)
            )
        ]
        return request, entry, history

    _, entry, history = db.read(read)
    error: str | None = None
    body = ""
    try:
        body = synthesize(entry, history)
        if not isinstance(body, str) or not body.strip():
            error = "the provider answered with an empty body"
    except Exception as exc:  # any provider failure ends the request as failed, with its reason
        error = f"{type(exc).__name__}: {exc}"[:2000]

    def finish(conn: sqlite3.Connection) -> dict[str, Any]:
        nonlocal error
        current = _request_row(conn, request_id)
        if current["status"] != "requested":
            raise Conflict(f"resynthesis request {request_id} is already {current['status']}")
        now, memory_id = utc_now_iso(), entry["id"]
        result_revision = None
        if error is None:
            result_revision, error = _commit_body(
                conn, entry, redact(body), provider=provider, actor=actor, now=now
            )
        status = "completed" if error is None else "failed"
        conn.execute(
            "UPDATE memory_resynthesis_requests SET status = ?, provider = ?, finished_at = ?,"
            " result_revision = ?, error = ? WHERE id = ?",
            (status, provider, now, result_revision, error, request_id),
        )
        conn.execute("UPDATE memory_entries SET resynthesis_status = ? WHERE id = ?", (status, memory_id))
        record_change(
            conn,
            "memory.resynthesized" if error is None else "memory.resynthesis_failed",
            actor=actor,
            memory_id=memory_id,
            scope=entry["scope"],
            payload={
                "request_id": request_id,
                "provider": provider,
                "revision": result_revision,
                "error": error,
            },
        )
        return resynthesis_view(_request_row(conn, request_id))

    return db.write(finish)


def _commit_body(
    conn: sqlite3.Connection, entry: dict[str, Any], body: str, *, provider: str, actor: str, now: str
) -> tuple[int | None, str | None]:
    """Write the synthesized body as the next revision; ``(revision, error)``."""
    memory_id, seen = entry["id"], int(entry["revision"])
    if body == entry["body_md"]:
        row = conn.execute("SELECT revision FROM memory_entries WHERE id = ?", (memory_id,)).fetchone()
        if row is None or int(row["revision"]) != seen:
            return None, "the entry changed while it was being resynthesized"
        return seen, None  # nothing to rewrite: completed at the current revision
    updated = conn.execute(
        "UPDATE memory_entries SET body_md = ?, lc_body = ?, revision = revision + 1, updated_at = ?"
        " WHERE id = ? AND revision = ?",
        (body, body.lower(), now, memory_id, seen),
    )
    if updated.rowcount != 1:
        return None, "the entry changed while it was being resynthesized"
    index_entries(conn, [memory_id])
    revision_row(
        conn,
        memory_id,
        seen + 1,
        title=entry["title"],
        body_md=body,
        reason=f"resynthesized ({provider})",
        actor=actor,
        now=now,
        provenance={"resynthesized_from": seen, "provider": provider},
    )
    return seen + 1, None


_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n+")
_TRAILING = re.compile(r"[ \t]+$", re.MULTILINE)


def lexical_resynthesis(entry: dict[str, Any], history: list[dict[str, Any]]) -> str:
    """The ``lexical`` provider's synthesis: no model, deterministic.

    Trailing whitespace and runs of blank lines go; a paragraph repeated verbatim (a reason
    appended twice, the same note merged in from two entries) is kept once, where it first
    appears. The result depends only on the current body, so fulfilling twice changes nothing.
    """
    del history  # the lexical heuristic reads only the current body
    body = _TRAILING.sub("", str(entry["body_md"]).replace("\r\n", "\n")).strip("\n")
    kept: list[str] = []
    seen: set[str] = set()
    for paragraph in _PARAGRAPH_BREAK.split(body):
        key = " ".join(paragraph.split()).lower()
        if key and key not in seen:
            seen.add(key)
            kept.append(paragraph.strip("\n"))
    return "\n\n".join(kept) if kept else body
