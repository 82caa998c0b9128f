"""A proposal's timeline: every event naming it, oldest first, enriched for reading.

One indexed range read of the event log (``events_by_proposal``) plus one batched lookup per kind
of enrichment, so the cost depends on the proposal's own history, not on the size of the log:

- ``proposal.created`` / ``proposal.patch_attached``: the patch version with its SHA-256, size
  and touched files (``patch``);
- ``vote.cast``: the vote, its patch version and whether it counts *now* (``vote``), and for a
  vote cast by a launched reviewer, the launch that cast it (``launch``: image, provider, status,
  exit code, duration);
- ``decision.recorded``: the decision and the decision that superseded it, if any (``decision``);
- ``memory.oracle_warning``: each cited memory entry resolved to its ID, title, status, scope and
  kind, or marked ``missing`` (``cited_memories``);
- everything else (review rounds, launches ``role.*``, apply and reject events) as recorded.
"""

from __future__ import annotations

import sqlite3
from datetime import datetime
from typing import Any

from store.config import ProjectConfig
from store.db import Database
from store.events import Event, event_from_row
from store.memory import MemoryStore
from store.patches import list_versions
from store.work._decisions import decision_from_row
from store.work._proposals import proposal_view
from store.work._records import load_proposal
from store.work._rounds import ballot_from_row, counting_votes
from store.work._vocabulary import check_object_id

__all__ = ["TimelineStore"]

_PATCH_EVENTS = frozenset({"proposal.created", "proposal.patch_attached"})


class TimelineStore:
    """Reads timelines; every method is blocking (call it through ``Database.run``)."""

    def __init__(self, db: Database, config: ProjectConfig, memory: MemoryStore):
        self.db = db
        self.config = config
        self.memory = memory

    def timeline(self, proposal_id: object) -> dict[str, Any]:
        """``{"proposal": {...}, "events": [...]}`` for one proposal."""
        id_v = check_object_id("proposal_id", proposal_id)
        return self.db.read(lambda conn: self._read(conn, id_v))

    def _read(self, conn: sqlite3.Connection, proposal_id: str) -> dict[str, Any]:
        proposal = load_proposal(conn, proposal_id)
        events = timeline_events(conn, proposal_id)
        versions = {v.version: v.to_dict() for v in list_versions(conn, proposal_id)}
        counting = {v.id for v in counting_votes(conn, proposal_id, proposal.current_version)}
        votes = _by_id(conn, "votes", [e.payload.get("vote_id") for e in events if e.type == "vote.cast"])
        launched = _launches_of(conn, [e.credential_id for e in events if e.type == "vote.cast"])
        decision_ids = [
            (e.payload.get("decision") or {}).get("id") for e in events if e.type == "decision.recorded"
        ]
        decisions = _by_id(conn, "decisions", decision_ids)
        superseded_by = {
            r["supersedes"]: r["id"]
            for r in conn.execute(
                "SELECT id, supersedes FROM decisions WHERE proposal_id = ? AND supersedes IS NOT NULL",
                (proposal_id,),
            )
        }
        cited: list[str] = []
        for event in events:
            if event.type == "memory.oracle_warning":
                cited.extend(_strings(event.payload.get("cited_memory_ids")))
        memories = self.memory.get_many(conn, sorted(set(cited)))

        out: list[dict[str, Any]] = []
        for event in events:
            item = event.to_dict()
            if event.type in _PATCH_EVENTS and "version" in event.payload:
                item["patch"] = versions.get(event.payload["version"])
            elif event.type == "proposal.created":
                item["patch"] = versions.get(1)
            elif event.type == "vote.cast" and (vote := votes.get(str(event.payload.get("vote_id")))):
                item["vote"] = ballot_from_row(vote, counts=vote["id"] in counting).to_dict()
                if event.credential_id in launched:
                    item["launch"] = launched[event.credential_id]
            elif event.type == "decision.recorded":
                decision_id = str((event.payload.get("decision") or {}).get("id"))
                if decision_id in decisions:
                    item["decision"] = {
                        **decision_from_row(decisions[decision_id]).to_dict(),
                        "superseded_by": superseded_by.get(decision_id),
                    }
            elif event.type == "memory.oracle_warning":
                item["cited_memories"] = [
                    _memory_ref(memory_id, memories)
                    for memory_id in _strings(event.payload.get("cited_memory_ids"))
                ]
            out.append(item)
        return {"proposal": proposal_view(conn, self.config, proposal), "events": out}


def _strings(value: object) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _by_id(conn: sqlite3.Connection, table: str, ids: list[Any]) -> dict[str, sqlite3.Row]:
    wanted = sorted({i for i in ids if isinstance(i, str)})
    if not wanted:
        return {}
    found: dict[str, sqlite3.Row] = {}
    for start in range(0, len(wanted), 500):  # stay under SQLite's bound-parameter limit
        chunk = wanted[start : start + 500]
        sql = f"SELECT * FROM {table} WHERE id IN ({','.join('?' * len(chunk))})"
        found.update({r["id"]: r for r in conn.execute(sql, chunk)})
    return found


def _launches_of(conn: sqlite3.Connection, credentials: list[str | None]) -> dict[str, dict[str, Any]]:
    """The launch behind each capability credential among ``credentials``: what ran the voter.

    ``{grant id: {"id", "agent_id", "role", "image", "provider", "status", "exit_code", "reason",
    "started_at", "ended_at", "duration_seconds"}}``; credentials of no launch are absent.
    """
    grants = [c for c in credentials if c]
    if not grants:
        return {}
    rows = conn.execute(
        "SELECT g.id AS grant_id, l.* FROM capability_grants g JOIN role_launches l ON l.id = g.launch_id"
        f" WHERE g.id IN ({','.join('?' * len(grants))})",
        grants,
    ).fetchall()
    return {
        str(row["grant_id"]): {
            "id": row["id"],
            "agent_id": row["agent_id"],
            "role": row["role"],
            "image": row["image"],
            "provider": row["provider"],
            "status": row["status"],
            "exit_code": row["exit_code"],
            "reason": row["reason"],
            "started_at": row["started_at"],
            "ended_at": row["ended_at"],
            "duration_seconds": _seconds_between(row["started_at"], row["ended_at"]),
        }
        for row in rows
    }


def _seconds_between(start: str | None, end: str | None) -> float | None:
    if not start or not end:
        return None
    try:
        return round((datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds(), 3)
    except ValueError:
        return None


def _memory_ref(memory_id: str, memories: dict[str, Any]) -> dict[str, Any]:
    entry = memories.get(memory_id)
    if entry is None:
        return {"id": memory_id, "missing": True}
    return {
        "id": entry.id,
        "title": entry.title,
        "status": entry.status,
        "scope": entry.scope,
        "kind": entry.kind,
    }


def timeline_events(conn: sqlite3.Connection, proposal_id: str) -> list[Event]:
    """The raw events of a proposal, oldest first (for callers that need no enrichment)."""
    return [
        event_from_row(r)
        for r in conn.execute("SELECT * FROM events WHERE proposal_id = ? ORDER BY id", (proposal_id,))
    ]
