"""What the MemoryOracle reads and writes: a task's history and its warnings.

:func:`task_history` answers ``task.history`` for the task ``T`` and proposal ``P`` of a grant, in
one read transaction: the task, the proposal, and four lists, newest first, each cut at
:data:`HISTORY_LIMIT` with its own ``truncated`` flag (true only when the list had more):

- ``proposals``: the proposals of ``T``;
- ``decisions``: decisions on ``T`` or on any of its proposals;
- ``events``: events of ``T`` and of its proposals (launch events carry their proposal);
- ``memories``: ``active`` memory entries whose scope is ``T`` or ``"project"``.

Each list reads at most ``HISTORY_LIMIT + 1`` rows through an index, so the answer costs the same
on a million-event log as on an empty one.

:meth:`OracleStore.warn` writes one ``memory.oracle_warning`` event after proving, inside the
same write transaction, that the grant is still live, that every cited memory exists, is
``active`` and lies in ``{T, "project"}``, and that every cited event belongs to ``T``'s history;
otherwise ``invalid_citation`` and nothing is written. It changes no proposal, vote or decision.
Two optional arguments make a warning readable without parsing its Markdown: ``confidence`` (a
number in 0..1) and ``evidence`` (at most :data:`MAX_EVIDENCE` quoted patch lines, each
``{"path", "line", "text"}`` on a file the current patch version touches); anything else is
``invalid_argument`` and nothing is written. They enter the payload only when given, so a warning
without them has exactly the contract's fields.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from typing import Any

from store._text import check_fraction, check_int, check_text
from store.access import PROJECT_SCOPE, GrantRecord, require_live_grant
from store.config import ProjectConfig
from store.db import Database
from store.errors import Forbidden, InvalidArgument, InvalidCitation, NotFound
from store.events import append_event, event_from_row
from store.memory import ENTRY_COLUMNS, core_from_values
from store.patches import PatchVersion, get_version
from store.work import Proposal, decision_from_row, load_proposal, load_task, proposal_view

__all__ = [
    "HISTORY_LIMIT",
    "MAX_CITATIONS",
    "MAX_EVIDENCE",
    "MAX_EVIDENCE_LINE",
    "MAX_EVIDENCE_TEXT",
    "MAX_WARNING_CHARS",
    "SEVERITIES",
    "OracleStore",
    "current_patch",
    "task_history",
]

HISTORY_LIMIT = 100
MAX_CITATIONS = 50
MAX_WARNING_CHARS = 20_000
SEVERITIES = ("info", "warning", "critical")
MAX_EVIDENCE = 20
"""The most patch lines one warning may quote."""
MAX_EVIDENCE_TEXT = 500
"""The longest quoted line, in characters."""
MAX_EVIDENCE_LINE = 2**31 - 1
"""The highest line number a quoted line may carry."""
_MAX_PATH_CHARS = 4096
_EVIDENCE_KEYS = frozenset({"path", "line", "text"})
WARNING_EVENT = "memory.oracle_warning"


def _proposal_item(row: sqlite3.Row) -> dict[str, Any]:
    # A light projection: the list may hold 100 proposals and each full view costs queries.
    return {
        "id": row["id"],
        "task_id": row["task_id"],
        "agent_id": row["agent_id"],
        "title": row["title"],
        "summary_md": row["summary_md"],
        "risk": row["risk"],
        "status": row["status"],
        "current_version": int(row["current_version"]),
        "created_at": row["created_at"],
        "updated_at": row["updated_at"],
    }


def _cut(rows: list[Any]) -> tuple[list[Any], bool]:
    return rows[:HISTORY_LIMIT], len(rows) > HISTORY_LIMIT


def _check_binding(conn: sqlite3.Connection, binding: GrantRecord) -> Proposal:
    proposal = load_proposal(conn, binding.proposal_id)
    if proposal.task_id != binding.task_id:  # a grant row is immutable; this is a tampered DB
        raise Forbidden(f"proposal {binding.proposal_id} does not belong to task {binding.task_id}")
    return proposal


def task_history(conn: sqlite3.Connection, config: ProjectConfig, binding: GrantRecord) -> dict[str, Any]:
    """``task.history`` for the grant's task and proposal (run it in one read transaction)."""
    proposal_row = _check_binding(conn, binding)
    task = load_task(conn, binding.task_id)
    fetch = HISTORY_LIMIT + 1
    params = {"task": binding.task_id, "project": PROJECT_SCOPE, "fetch": fetch}
    proposals, proposals_cut = _cut(
        conn.execute(
            "SELECT * FROM proposals WHERE task_id = :task ORDER BY created_at DESC, id DESC LIMIT :fetch",
            params,
        ).fetchall()
    )
    decisions, decisions_cut = _cut(
        conn.execute(
            "SELECT * FROM decisions WHERE id IN ("
            " SELECT id FROM (SELECT id FROM decisions WHERE task_id = :task"
            "  ORDER BY created_at DESC, id DESC LIMIT :fetch) AS on_task"
            " UNION SELECT id FROM (SELECT id FROM decisions WHERE proposal_id IN"
            "  (SELECT id FROM proposals WHERE task_id = :task)"
            "  ORDER BY created_at DESC, id DESC LIMIT :fetch) AS on_proposals"
            ") ORDER BY created_at DESC, id DESC LIMIT :fetch",
            params,
        ).fetchall()
    )
    events, events_cut = _cut(
        conn.execute(
            "SELECT * FROM events WHERE id IN ("
            " SELECT id FROM (SELECT id FROM events WHERE task_id = :task ORDER BY id DESC LIMIT :fetch) AS t"
            " UNION SELECT id FROM (SELECT id FROM events WHERE proposal_id IN"
            "  (SELECT id FROM proposals WHERE task_id = :task) ORDER BY id DESC LIMIT :fetch) AS p"
            ") ORDER BY id DESC LIMIT :fetch",
            params,
        ).fetchall()
    )
    memories, memories_cut = _cut(
        conn.execute(
            f"SELECT {ENTRY_COLUMNS} FROM memory_entries AS m"
            " WHERE m.status = 'active' AND m.scope IN (:task, :project)"
            " ORDER BY m.created_at DESC, m.id DESC LIMIT :fetch",
            params,
        ).fetchall()
    )
    return {
        "task": task.to_dict(),
        "proposal": proposal_view(conn, config, proposal_row, detail=False),
        "proposals": [_proposal_item(row) for row in proposals],
        "decisions": [decision_from_row(row).to_dict() for row in decisions],
        "events": [event_from_row(row).to_dict() for row in events],
        # The tools' projection built from the row, as memory.query answers it: the whole record
        # (tags and provenance decoded, then dropped) cost half of the history.
        "memories": [core_from_values(row) for row in memories],
        "truncated": {
            "proposals": proposals_cut,
            "decisions": decisions_cut,
            "events": events_cut,
            "memories": memories_cut,
        },
    }


def current_patch(conn: sqlite3.Connection, binding: GrantRecord) -> PatchVersion:
    """The current patch version of the grant's proposal."""
    proposal = _check_binding(conn, binding)
    version = proposal.current_version
    if version < 1:
        raise NotFound(f"proposal {binding.proposal_id} has no patch yet")
    return get_version(conn, binding.proposal_id, version)


def _check_message(message_md: object) -> str:
    # The store's one text rule: a warning reaches terminals and the console like any other text.
    return check_text("message_md", message_md, limit=MAX_WARNING_CHARS)


def _check_citations(memory_ids: object, event_ids: object) -> tuple[list[str], list[int]]:
    if not isinstance(memory_ids, list | tuple) or not memory_ids:
        raise InvalidCitation("cite at least one memory entry (cited_memory_ids)")
    if not all(isinstance(item, str) and item for item in memory_ids):
        raise InvalidCitation("cited_memory_ids must be nonempty strings")
    events = [] if event_ids is None else event_ids
    if not isinstance(events, list | tuple) or not all(
        isinstance(item, int) and not isinstance(item, bool) for item in events
    ):
        raise InvalidCitation("cited_event_ids must be integers")
    for index, item in enumerate(events):  # an ID SQLite cannot hold is a malformed argument
        check_int(f"cited_event_ids[{index}]", item, minimum=1)
    memories = list(dict.fromkeys(memory_ids))  # a repeated citation says nothing more
    cited_events = list(dict.fromkeys(events))
    if len(memories) > MAX_CITATIONS or len(cited_events) > MAX_CITATIONS:
        raise InvalidCitation(f"cite at most {MAX_CITATIONS} memory entries and {MAX_CITATIONS} events")
    return memories, cited_events


def _check_confidence(confidence: object) -> float | None:
    return None if confidence is None else check_fraction("confidence", confidence)


def _check_evidence_item(index: int, raw: object) -> dict[str, Any]:
    where = f"evidence[{index}]"
    if not isinstance(raw, Mapping) or set(raw) != _EVIDENCE_KEYS:
        raise InvalidArgument(f"{where} must be an object with exactly path, line and text")
    return {
        "path": check_text(f"{where}.path", raw["path"], limit=_MAX_PATH_CHARS),
        "line": check_int(f"{where}.line", raw["line"], minimum=1, maximum=MAX_EVIDENCE_LINE),
        "text": check_text(f"{where}.text", raw["text"], limit=MAX_EVIDENCE_TEXT, blank_ok=True),
    }


def _check_evidence(evidence: object) -> list[dict[str, Any]] | None:
    if evidence is None:
        return None
    if not isinstance(evidence, list | tuple):
        raise InvalidArgument("evidence must be a list of {path, line, text}")
    if len(evidence) > MAX_EVIDENCE:
        raise InvalidArgument(f"evidence may quote at most {MAX_EVIDENCE} lines")
    return [_check_evidence_item(index, raw) for index, raw in enumerate(evidence)]


def _refuse_foreign_paths(evidence: list[dict[str, Any]] | None, patch: PatchVersion) -> None:
    touched = set(patch.files)
    outside = sorted({item["path"] for item in evidence or [] if item["path"] not in touched})
    if outside:
        raise InvalidArgument(
            f"evidence quotes files patch v{patch.version} does not touch: {', '.join(outside)}",
            details={"paths": outside},
        )


def _refuse_bad_memories(conn: sqlite3.Connection, binding: GrantRecord, ids: list[str]) -> None:
    allowed = {binding.task_id, PROJECT_SCOPE}
    rows = {
        row["id"]: row
        for row in conn.execute(
            f"SELECT id, scope, status FROM memory_entries WHERE id IN ({','.join('?' * len(ids))})", ids
        )
    }
    problems = []
    for memory_id in ids:
        row = rows.get(memory_id)
        if row is None:
            problems.append(f"{memory_id}: no such memory entry")
        elif row["status"] != "active":
            problems.append(f"{memory_id}: status is {row['status']!r}, not 'active'")
        elif row["scope"] not in allowed:
            problems.append(f"{memory_id}: outside the task and project scopes")
    if problems:
        raise InvalidCitation("invalid citation: " + "; ".join(problems), details={"problems": problems})


def _refuse_foreign_events(conn: sqlite3.Connection, binding: GrantRecord, ids: list[int]) -> None:
    if not ids:
        return
    rows = conn.execute(
        f"SELECT id FROM events WHERE id IN ({','.join('?' * len(ids))}) AND (task_id = ? OR proposal_id IN"
        " (SELECT id FROM proposals WHERE task_id = ?))",
        [*ids, binding.task_id, binding.task_id],
    ).fetchall()
    found = {int(row["id"]) for row in rows}
    missing = [event_id for event_id in ids if event_id not in found]
    if missing:
        problems = [f"event {event_id}: not in the history of task {binding.task_id}" for event_id in missing]
        raise InvalidCitation("invalid citation: " + "; ".join(problems), details={"problems": problems})


class OracleStore:
    """The oracle's reads and its one write; every method is blocking (use ``Database.run``)."""

    def __init__(self, db: Database, config: ProjectConfig):
        self.db = db
        self.config = config

    def history(self, binding: GrantRecord) -> dict[str, Any]:
        """``task.history``, in one read transaction."""
        return self.db.read(lambda conn: task_history(conn, self.config, binding))

    def patch_version(self, binding: GrantRecord) -> PatchVersion:
        """The current patch version row of the grant's proposal."""
        return self.db.read(lambda conn: current_patch(conn, binding))

    def warn(
        self,
        binding: GrantRecord,
        *,
        message_md: object,
        cited_memory_ids: object,
        cited_event_ids: object = None,
        severity: object = "warning",
        confidence: object = None,
        evidence: object = None,
    ) -> dict[str, Any]:
        """``oracle.warn``: validate every citation, then write one ``memory.oracle_warning`` event."""
        message = _check_message(message_md)
        if severity not in SEVERITIES:
            raise InvalidArgument(f"severity must be one of {', '.join(SEVERITIES)}")
        memories, events = _check_citations(cited_memory_ids, cited_event_ids)
        score = _check_confidence(confidence)
        quoted = _check_evidence(evidence)
        extra: dict[str, Any] = {}
        if score is not None:
            extra["confidence"] = score
        if quoted is not None:
            extra["evidence"] = quoted

        def write(conn: sqlite3.Connection) -> dict[str, Any]:
            require_live_grant(conn, binding.id)
            patch = current_patch(conn, binding)
            _refuse_foreign_paths(quoted, patch)
            _refuse_bad_memories(conn, binding, memories)
            _refuse_foreign_events(conn, binding, events)
            event = append_event(
                conn,
                WARNING_EVENT,
                actor=binding.agent_id,
                task_id=binding.task_id,
                proposal_id=binding.proposal_id,
                payload={
                    "proposal_id": binding.proposal_id,
                    "task_id": binding.task_id,
                    "patch_version": patch.version,
                    "patch_sha256": patch.sha256,
                    "message_md": message,
                    "severity": severity,
                    "cited_memory_ids": memories,
                    "cited_event_ids": events,
                    "grant_id": binding.id,
                    "launch_id": binding.launch_id,
                    **extra,
                },
            )
            return event.to_dict()

        return self.db.write(write)
