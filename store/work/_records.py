"""The typed proposal rows: :class:`Proposal` (read by :func:`load_proposal`) and
:class:`ApplyTransaction` (read by :func:`load_transaction`).

Every store of :mod:`store.work` passes a proposal around as this frozen record, never as a row,
so its status and risk are members of :class:`~store.work._vocabulary.ProposalStatus` and
:class:`~store.work._vocabulary.Risk` and its JSON lists are decoded once.
:func:`~store.work._proposals.proposal_view` turns it into the JSON answer.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from typing import Any

from store._ids import utc_now_iso
from store._rows import as_dict, fetch_row, from_row
from store.events import append_event
from store.work._vocabulary import ProposalStatus, Risk, json_list

__all__ = [
    "ApplyTransaction",
    "Proposal",
    "load_proposal",
    "load_transaction",
    "proposal_event",
    "proposal_from_row",
    "set_status",
    "transaction_from_row",
]


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
    return proposal_from_row(fetch_row(conn, "proposals", "proposal", proposal_id))


@dataclass(frozen=True)
class ApplyTransaction:
    """One ``apply_transactions`` row: an attempt to apply a patch version (``applying``, then
    ``applied``, ``rolled_back`` or ``failed``)."""

    id: str
    proposal_id: str
    patch_version: int
    patch_sha256: str
    status: str
    files: list[str]
    before_hash: str
    after_hash: str | None
    rollback_path: str
    error: str | None
    actor: str
    started_at: str
    finished_at: str | None

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape used by every interface (the row, ``files`` decoded)."""
        return as_dict(self)


def transaction_from_row(row: sqlite3.Row) -> ApplyTransaction:
    """Build an :class:`ApplyTransaction` from an ``apply_transactions`` row."""
    return from_row(ApplyTransaction, row, files=json_list(json.loads(row["files"])))


def load_transaction(conn: sqlite3.Connection, transaction_id: str) -> ApplyTransaction:
    """An apply transaction on an open connection, or :class:`NotFound`."""
    return transaction_from_row(fetch_row(conn, "apply_transactions", "apply transaction", transaction_id))


def set_status(
    conn: sqlite3.Connection, proposal_id: str, status: ProposalStatus, *, now: str | None = None
) -> None:
    """Move a proposal to ``status`` (the caller checks the move and writes its event)."""
    conn.execute(
        "UPDATE proposals SET status = ?, updated_at = ? WHERE id = ?",
        (status, now or utc_now_iso(), proposal_id),
    )


def proposal_event(
    conn: sqlite3.Connection, event_type: str, proposal: Proposal, *, actor: str, payload: dict[str, Any]
) -> None:
    """Append an event about ``proposal`` (its task and ID filled in) in the caller's transaction."""
    append_event(
        conn, event_type, actor=actor, task_id=proposal.task_id, proposal_id=proposal.id, payload=payload
    )
