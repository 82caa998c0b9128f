"""The typed proposal row: :class:`Proposal`, read from ``proposals`` by :func:`load_proposal`.

Every store of :mod:`store.work` passes a proposal around as this frozen record, never as a row,
so its status and risk are members of :class:`~store.work._vocabulary.ProposalStatus` and
:class:`~store.work._vocabulary.Risk` and its JSON lists are decoded once.
:func:`~store.work._proposals.proposal_view` turns it into the JSON answer.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass

from store._rows import from_row
from store.errors import NotFound
from store.work._vocabulary import ProposalStatus, Risk, json_list

__all__ = ["Proposal", "load_proposal", "proposal_from_row"]


@dataclass(frozen=True)
class Proposal:
    """One ``proposals`` row, decoded."""

    id: str
    task_id: str
    agent_id: str
    title: str
    summary_md: str
    risk: Risk
    affected_resources: tuple[str, ...]
    expected_tests: tuple[str, ...]
    rollback_notes_md: str
    status: ProposalStatus
    current_version: int
    created_by: str
    created_at: str
    updated_at: str


def proposal_from_row(row: sqlite3.Row) -> Proposal:
    """Build a :class:`Proposal` from a ``proposals`` row."""
    return from_row(
        Proposal,
        row,
        risk=Risk(row["risk"]),
        status=ProposalStatus(row["status"]),
        affected_resources=tuple(json_list(json.loads(row["affected_resources"]))),
        expected_tests=tuple(json_list(json.loads(row["expected_tests"]))),
        current_version=int(row["current_version"]),
    )


def load_proposal(conn: sqlite3.Connection, proposal_id: str) -> Proposal:
    """A proposal on an open connection, or :class:`NotFound`."""
    row = conn.execute("SELECT * FROM proposals WHERE id = ?", (proposal_id,)).fetchone()
    if row is None:
        raise NotFound(f"proposal {proposal_id} does not exist")
    return proposal_from_row(row)
