"""Review rounds, the vote model and the consensus policy.

A round is opened for one patch version. Its **voting roles** are ``Reviewer`` always, plus
``Security`` when the proposal's risk is in ``policy.security_risks`` or a touched path matches
``policy.security_paths``; its **candidates** are the roster agents holding a voting role, never the
author; the ``MemoryOracle`` agents are listed as advisory reviewers (``"launched": false``: opening
a round starts no process) and can never vote.

**Counting votes** are, for the proposal's current patch version, the latest vote of each agent.
Consensus is reached when there are at least ``policy.required_approvals`` counting approvals
(``approve``/``approve_with_notes``), no counting ``reject``/``veto``, and, when ``Security`` votes
and ``policy.require_security_approval`` is set, one counting approval from a Security agent.

Status follows consensus after every vote (:func:`settle_status`): ``accepted`` when reached (event
``proposal.accepted``), else ``revision_requested`` when a counting vote is ``revise``, else
``in_review``. Leaving ``accepted`` (a later veto, a new patch version) emits
``proposal.consensus_lost``.
"""

from __future__ import annotations

import json
import re
import sqlite3
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from store._ids import new_id, utc_now_iso
from store._rows import as_dict, from_row
from store.access import revoke_for_proposal_in
from store.config import ProjectConfig
from store.work._records import Proposal, proposal_event, set_status
from store.work._vocabulary import (
    ADVISORY_ROLE,
    REVIEWER_ROLE,
    SECURITY_ROLE,
    ProposalStatus,
    Vote,
    json_list,
)

__all__ = [
    "Ballot",
    "Consensus",
    "ReviewRound",
    "ballot_from_row",
    "close_open_round",
    "evaluate_consensus",
    "glob_match",
    "latest_round",
    "leave_review",
    "open_round",
    "plan_round",
    "settle_status",
]


_JSON_COLUMNS = ("voting_roles", "candidates", "advisory")
"""The ``review_rounds`` columns that hold JSON lists."""


@dataclass(frozen=True)
class ReviewRound:
    """One review round of a proposal, for one patch version."""

    id: str
    proposal_id: str
    number: int
    patch_version: int
    voting_roles: list[str]
    candidates: list[dict[str, Any]]
    advisory: list[dict[str, Any]]
    status: str
    close_reason: str | None
    opened_by: str
    opened_at: str
    closed_at: str | None

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape used by every interface."""
        return as_dict(self)


def round_from_row(row: sqlite3.Row) -> ReviewRound:
    """Build a :class:`ReviewRound` from a ``review_rounds`` row."""
    return from_row(ReviewRound, row, **{key: json_list(json.loads(row[key])) for key in _JSON_COLUMNS})


@dataclass(frozen=True)
class Ballot:
    """One cast vote (immutable); ``counts`` says whether it counts now."""

    id: str
    proposal_id: str
    round_id: str
    agent_id: str
    role: str
    patch_version: int
    vote: Vote
    reason_md: str
    replaces: str | None
    actor: str
    created_at: str
    counts: bool = False

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape used by every interface."""
        return as_dict(self)


def ballot_from_row(row: sqlite3.Row, *, counts: bool = False) -> Ballot:
    """Build a :class:`Ballot` from a ``votes`` row."""
    return from_row(Ballot, row, vote=Vote(row["vote"]), counts=counts)


@dataclass(frozen=True)
class Consensus:
    """The consensus state of a proposal's current patch version."""

    patch_version: int
    approvals: int
    required: int
    blocking: list[dict[str, str]] = field(default_factory=list)
    revisions_requested: list[dict[str, str]] = field(default_factory=list)
    missing_roles: list[str] = field(default_factory=list)
    counting_vote_ids: list[str] = field(default_factory=list)
    reached: bool = False

    def to_dict(self) -> dict[str, Any]:
        """``{"approvals", "required", "blocking", "reached", ...}``."""
        return as_dict(self)


# -- planning ----------------------------------------------------------------------------------


@lru_cache(maxsize=256)
def _glob_regex(pattern: str) -> re.Pattern[str]:
    out = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out))


def glob_match(path: str, pattern: str) -> bool:
    """Whether a repository path matches a glob: ``*`` stays in one directory, ``**`` crosses them."""
    return _glob_regex(pattern).fullmatch(path) is not None


def plan_round(
    config: ProjectConfig, *, author: str, risk: str, files: list[str]
) -> tuple[list[str], list[dict[str, Any]], list[dict[str, Any]]]:
    """The voting roles, candidates and advisory entries of a round (see the module docstring)."""
    policy = config.policy
    roles = [REVIEWER_ROLE]
    security_paths = [p for p in files if any(glob_match(p, g) for g in policy.security_paths)]
    if risk in policy.security_risks or security_paths:
        roles.append(SECURITY_ROLE)
    candidates = [
        {"agent_id": agent, "role": role}
        for agent, role in sorted(config.agents.items())
        if role in roles and agent != author
    ]
    oracles = sorted(agent for agent, role in config.agents.items() if role == ADVISORY_ROLE)
    advisory = [
        {"agent_id": agent, "role": ADVISORY_ROLE, "advisory": True, "launched": False}
        for agent in (oracles or [config.roles.memory_oracle.agent_id])
    ]
    return roles, candidates, advisory


# -- rounds ------------------------------------------------------------------------------------


def latest_round(conn: sqlite3.Connection, proposal_id: str) -> ReviewRound | None:
    """The proposal's most recent round (open or closed), if any."""
    row = conn.execute(
        "SELECT * FROM review_rounds WHERE proposal_id = ? ORDER BY number DESC LIMIT 1", (proposal_id,)
    ).fetchone()
    return None if row is None else round_from_row(row)


def open_round(
    conn: sqlite3.Connection,
    config: ProjectConfig,
    proposal: Proposal,
    *,
    files: list[str],
    actor: str,
    reason: str,
) -> ReviewRound:
    """Open a round for the proposal's current version and write ``proposal.review_requested``."""
    previous = latest_round(conn, proposal.id)
    roles, candidates, advisory = plan_round(
        config, author=proposal.agent_id, risk=proposal.risk, files=files
    )
    now = utc_now_iso()
    found = ReviewRound(
        id=new_id("round"),
        proposal_id=proposal.id,
        number=(previous.number + 1) if previous else 1,
        patch_version=proposal.current_version,
        voting_roles=roles,
        candidates=candidates,
        advisory=advisory,
        status="open",
        close_reason=None,
        opened_by=actor,
        opened_at=now,
        closed_at=None,
    )
    conn.execute(
        "INSERT INTO review_rounds (id, proposal_id, number, patch_version, voting_roles, candidates,"
        " advisory, status, opened_by, opened_at) VALUES (:id, :proposal_id, :number, :patch_version,"
        " :voting_roles, :candidates, :advisory, :status, :opened_by, :opened_at)",
        {**as_dict(found), **{key: json.dumps(getattr(found, key)) for key in _JSON_COLUMNS}},
    )
    proposal_event(
        conn,
        "proposal.review_requested",
        proposal,
        actor=actor,
        payload={"round": found.to_dict(), "reason": reason},
    )
    return found


def close_open_round(conn: sqlite3.Connection, proposal_id: str, reason: str) -> ReviewRound | None:
    """Close the open round, if any; returns it as it was."""
    row = conn.execute(
        "SELECT * FROM review_rounds WHERE proposal_id = ? AND status = 'open'", (proposal_id,)
    ).fetchone()
    if row is None:
        return None
    conn.execute(
        "UPDATE review_rounds SET status = 'closed', close_reason = ?, closed_at = ? WHERE id = ?",
        (reason, utc_now_iso(), row["id"]),
    )
    return round_from_row(row)


# -- consensus ---------------------------------------------------------------------------------


def counting_votes(conn: sqlite3.Connection, proposal_id: str, version: int) -> list[Ballot]:
    """The latest vote of each agent on ``version``, in cast order."""
    rows = conn.execute(
        "SELECT v.* FROM votes AS v WHERE v.proposal_id = ? AND v.patch_version = ? AND v.rowid = ("
        " SELECT MAX(w.rowid) FROM votes AS w WHERE w.proposal_id = v.proposal_id"
        " AND w.patch_version = v.patch_version AND w.agent_id = v.agent_id) ORDER BY v.rowid",
        (proposal_id, version),
    ).fetchall()
    return [ballot_from_row(row, counts=True) for row in rows]


def evaluate_consensus(conn: sqlite3.Connection, config: ProjectConfig, proposal: Proposal) -> Consensus:
    """The consensus of the proposal's current version under the configured policy."""
    version = proposal.current_version
    policy = config.policy
    votes = counting_votes(conn, proposal.id, version)
    current = latest_round(conn, proposal.id)
    roles = current.voting_roles if current is not None and current.patch_version == version else []
    approvals = [v for v in votes if v.vote in Vote.APPROVING]
    blocking = [_cited(v) for v in votes if v.vote in Vote.BLOCKING]
    revise = [_cited(v) for v in votes if v.vote is Vote.REVISE]
    missing = []
    security_approved = any(v.role == SECURITY_ROLE for v in approvals)
    if SECURITY_ROLE in roles and policy.require_security_approval and not security_approved:
        missing.append(SECURITY_ROLE)
    reached = bool(roles) and len(approvals) >= policy.required_approvals and not blocking and not missing
    return Consensus(
        patch_version=version,
        approvals=len(approvals),
        required=policy.required_approvals,
        blocking=blocking,
        revisions_requested=revise,
        missing_roles=missing,
        counting_vote_ids=[v.id for v in votes],
        reached=reached,
    )


def _cited(vote: Ballot) -> dict[str, str]:
    return {"agent_id": vote.agent_id, "vote": vote.vote, "vote_id": vote.id}


def leave_review(conn: sqlite3.Connection, proposal_id: str, *, actor: str, status: ProposalStatus) -> None:
    """The proposal left review: revoke every live capability grant bound to it (SECURITY.md)."""
    revoke_for_proposal_in(conn, proposal_id, actor=actor, reason=f"proposal {status}")


def settle_status(
    conn: sqlite3.Connection, config: ProjectConfig, proposal: Proposal, *, actor: str
) -> tuple[ProposalStatus, Consensus]:
    """Move an in-review proposal to the status its consensus implies, writing the events."""
    consensus = evaluate_consensus(conn, config, proposal)
    old = proposal.status
    if old in ProposalStatus.TERMINAL or old is ProposalStatus.PENDING:
        return old, consensus
    if consensus.reached:
        new = ProposalStatus.ACCEPTED
    elif consensus.revisions_requested:
        new = ProposalStatus.REVISION_REQUESTED
    else:
        new = ProposalStatus.IN_REVIEW
    if new is old:
        return old, consensus
    set_status(conn, proposal.id, new)
    payload = {"from": old, "to": new, "consensus": consensus.to_dict()}
    if new is ProposalStatus.ACCEPTED:
        proposal_event(conn, "proposal.accepted", proposal, actor=actor, payload=payload)
        leave_review(conn, proposal.id, actor=actor, status=new)
    elif old is ProposalStatus.ACCEPTED:
        proposal_event(conn, "proposal.consensus_lost", proposal, actor=actor, payload=payload)
    else:
        proposal_event(conn, "proposal.status_changed", proposal, actor=actor, payload=payload)
    return new, consensus
