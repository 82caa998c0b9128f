"""Decisions: immutable records of what people decided about a task or a proposal.

A decision is never changed or deleted (the database refuses); a later decision names the one it
``supersedes`` (each decision can be superseded once). Outcomes and their effect on a proposal:

- ``rejected``: the proposal becomes ``rejected`` (``proposal.rejected``); its open round closes.
  ``patch.reject`` is this outcome.
- ``withdrawn``: the proposal becomes ``withdrawn`` (``proposal.withdrawn``); its open round closes.
- ``accepted``: records the acceptance; it requires consensus on the current version (a decision
  cannot replace the votes) and changes nothing else.
- ``deferred``, ``noted``: records only.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Any

from store._ids import new_id, utc_now_iso
from store._rows import as_dict, from_row
from store.config import ProjectConfig
from store.db import Database
from store.errors import Conflict, InvalidArgument, NotFound
from store.events import append_event
from store.work._proposals import proposal_view
from store.work._records import Proposal, load_proposal, proposal_event, set_status
from store.work._rounds import close_open_round, evaluate_consensus, leave_review
from store.work._tasks import load_task
from store.work._vocabulary import (
    MAX_BODY_CHARS,
    DecisionOutcome,
    ProposalStatus,
    check_choice,
    check_object_id,
    check_text,
)

__all__ = ["Decision", "DecisionStore", "decision_from_row"]


@dataclass(frozen=True)
class Decision:
    """One decision row."""

    id: str
    task_id: str
    proposal_id: str | None
    outcome: DecisionOutcome
    rationale_md: str
    patch_version: int | None
    supersedes: str | None
    decided_by: str
    created_at: str

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape used by every interface."""
        return as_dict(self)


def decision_from_row(row: sqlite3.Row) -> Decision:
    """Build a :class:`Decision` from a ``decisions`` row."""
    return from_row(Decision, row, outcome=DecisionOutcome(row["outcome"]))


_STATUS_OF = {
    DecisionOutcome.REJECTED: ProposalStatus.REJECTED,
    DecisionOutcome.WITHDRAWN: ProposalStatus.WITHDRAWN,
}
"""The outcomes that close a proposal, and the status each one gives it."""

_ABOUT_A_PROPOSAL = frozenset({DecisionOutcome.ACCEPTED, *_STATUS_OF})
"""The outcomes a decision about a task alone may not have."""


class DecisionStore:
    """Records decisions; every method is blocking (call it through ``Database.run``)."""

    def __init__(self, db: Database, config: ProjectConfig):
        self.db = db
        self.config = config

    def record(
        self,
        *,
        outcome: object,
        rationale_md: object,
        proposal_id: object = None,
        task_id: object = None,
        supersedes: object = None,
        actor: str,
    ) -> tuple[Decision, dict[str, Any] | None]:
        """``decision.record``: a new immutable decision; returns it and the proposal view (if any)."""
        outcome_v = check_choice("outcome", outcome, DecisionOutcome)
        rationale_v = check_text("rationale_md", rationale_md, limit=MAX_BODY_CHARS)
        proposal_v = None if proposal_id in (None, "") else check_object_id("proposal_id", proposal_id)
        task_v = None if task_id in (None, "") else check_object_id("task_id", task_id)
        supersedes_v = None if supersedes in (None, "") else check_object_id("supersedes", supersedes)
        if proposal_v is None and task_v is None:
            raise InvalidArgument("name the proposal_id or the task_id the decision is about")
        if proposal_v is None and outcome_v in _ABOUT_A_PROPOSAL:
            raise InvalidArgument(f"a {outcome_v!r} decision is about a proposal: give proposal_id")

        def write(conn: sqlite3.Connection) -> tuple[Decision, dict[str, Any] | None]:
            proposal = load_proposal(conn, proposal_v) if proposal_v else None
            if proposal is not None and task_v is not None and proposal.task_id != task_v:
                raise InvalidArgument(
                    f"proposal {proposal_v} belongs to task {proposal.task_id}, not {task_v}"
                )
            subject_task = proposal.task_id if proposal is not None else load_task(conn, str(task_v)).id
            if supersedes_v is not None:
                _check_supersedes(conn, supersedes_v, subject_task, proposal_v)
            if proposal is not None:
                _check_effect(conn, self.config, proposal, outcome_v)
            decision = Decision(
                id=new_id("decision"),
                task_id=subject_task,
                proposal_id=proposal_v,
                outcome=outcome_v,
                rationale_md=rationale_v,
                patch_version=proposal.current_version if proposal is not None else None,
                supersedes=supersedes_v,
                decided_by=actor,
                created_at=utc_now_iso(),
            )
            conn.execute(
                "INSERT INTO decisions (id, task_id, proposal_id, outcome, rationale_md, patch_version,"
                " supersedes, decided_by, created_at) VALUES (:id, :task_id, :proposal_id, :outcome,"
                " :rationale_md, :patch_version, :supersedes, :decided_by, :created_at)",
                as_dict(decision),
            )
            append_event(
                conn,
                "decision.recorded",
                actor=actor,
                task_id=subject_task,
                proposal_id=proposal_v,
                payload={"decision": decision.to_dict()},
            )
            if proposal is None:
                return decision, None
            new_status = _STATUS_OF.get(outcome_v)
            if new_status is not None:
                set_status(conn, proposal.id, new_status, now=decision.created_at)
                close_open_round(conn, proposal.id, f"proposal {new_status}")
                leave_review(conn, proposal.id, actor=actor, status=new_status)
                proposal_event(
                    conn,
                    f"proposal.{new_status}",
                    proposal,
                    actor=actor,
                    payload={
                        "from": proposal.status,
                        "decision_id": decision.id,
                        "patch_version": decision.patch_version,
                        "reason_md": rationale_v,
                    },
                )
            return decision, proposal_view(conn, self.config, load_proposal(conn, proposal.id))

        return self.db.write(write)

    def reject(
        self, *, proposal_id: object, reason_md: object, actor: str
    ) -> tuple[Decision, dict[str, Any]]:
        """``patch.reject``: a ``rejected`` decision on the proposal."""
        if proposal_id in (None, ""):
            raise InvalidArgument("proposal_id must not be blank")
        decision, view = self.record(
            outcome=DecisionOutcome.REJECTED, rationale_md=reason_md, proposal_id=proposal_id, actor=actor
        )
        assert view is not None
        return decision, view

    def list(self, *, proposal_id: str | None = None, task_id: str | None = None) -> list[Decision]:
        """Decisions about a proposal or a task, oldest first."""
        column, value = ("proposal_id", proposal_id) if proposal_id else ("task_id", task_id)
        rows = self.db.read(
            lambda conn: conn.execute(
                f"SELECT * FROM decisions WHERE {column} = ? ORDER BY rowid", (value,)
            ).fetchall()
        )
        return [decision_from_row(row) for row in rows]


def _check_supersedes(
    conn: sqlite3.Connection, supersedes: str, task_id: str, proposal_id: str | None
) -> None:
    row = conn.execute("SELECT * FROM decisions WHERE id = ?", (supersedes,)).fetchone()
    if row is None:
        raise NotFound(f"decision {supersedes} does not exist")
    if row["task_id"] != task_id or row["proposal_id"] != proposal_id:
        raise InvalidArgument(f"decision {supersedes} is about another task or proposal")
    taken = conn.execute("SELECT id FROM decisions WHERE supersedes = ?", (supersedes,)).fetchone()
    if taken is not None:
        raise Conflict(f"decision {supersedes} is already superseded by {taken['id']}")


def _check_effect(
    conn: sqlite3.Connection, config: ProjectConfig, proposal: Proposal, outcome: DecisionOutcome
) -> None:
    if outcome in _STATUS_OF and proposal.status in ProposalStatus.TERMINAL:
        raise Conflict(f"proposal {proposal.id} is already {proposal.status}")
    if outcome is DecisionOutcome.ACCEPTED and not evaluate_consensus(conn, config, proposal).reached:
        raise Conflict(f"proposal {proposal.id} has not reached consensus on its current patch version")
