"""Review requests and votes.

``request_review`` opens a round (see :mod:`store.work._rounds`) for a ``pending`` proposal and moves it
to ``in_review``; it starts no process. ``cast`` records a vote bound to the current patch version
after checking, in this order: the vote word (``invalid_argument``), the proposal
(``not_found``), the voter (``forbidden``: not in the roster, the author, a MemoryOracle, or not a
candidate of the open round), then the round (``conflict`` when none is open). A re-vote by the
same agent on the same version replaces the counting vote; both stay on record. Consensus and
status are settled in the same transaction.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Any

from store._ids import new_id, utc_now_iso
from store._rows import as_dict
from store._text import check_int
from store.config import ProjectConfig
from store.db import Database
from store.errors import Conflict, Forbidden, InvalidArgument
from store.patches import get_version
from store.work._proposals import proposal_view
from store.work._records import Proposal, load_proposal, proposal_event, set_status
from store.work._rounds import (
    Ballot,
    Consensus,
    ReviewRound,
    ballot_from_row,
    counting_votes,
    evaluate_consensus,
    open_round,
    round_from_row,
    settle_status,
)
from store.work._vocabulary import (
    ADVISORY_ROLE,
    MAX_BODY_CHARS,
    ProposalStatus,
    Vote,
    check_agent_id,
    check_choice,
    check_object_id,
    check_text,
)

__all__ = ["CastResult", "ReviewStore"]


@dataclass(frozen=True)
class CastResult:
    """What ``vote.cast`` answers: the vote, the consensus after it, the proposal's status."""

    vote: Ballot
    consensus: Consensus
    status: ProposalStatus

    def to_dict(self) -> dict[str, Any]:
        """``{"vote", "consensus", "proposal_status"}``."""
        return {
            "vote": self.vote.to_dict(),
            "consensus": self.consensus.to_dict(),
            "proposal_status": self.status,
        }


def _open_round(conn: sqlite3.Connection, proposal_id: str) -> ReviewRound | None:
    row = conn.execute(
        "SELECT * FROM review_rounds WHERE proposal_id = ? AND status = 'open'", (proposal_id,)
    ).fetchone()
    return None if row is None else round_from_row(row)


class ReviewStore:
    """Review rounds and votes; every method is blocking (call it through ``Database.run``)."""

    def __init__(self, db: Database, config: ProjectConfig):
        self.db = db
        self.config = config

    def request_review(self, *, proposal_id: object, actor: str) -> tuple[dict[str, Any], ReviewRound]:
        """``proposal.request_review``: open a round for the current version; start no process."""
        id_v = check_object_id("proposal_id", proposal_id)

        def write(conn: sqlite3.Connection) -> tuple[dict[str, Any], ReviewRound]:
            proposal = load_proposal(conn, id_v)
            if proposal.status in ProposalStatus.TERMINAL:
                raise Conflict(f"proposal {id_v} is {proposal.status}; it cannot be reviewed")
            current = _open_round(conn, id_v)
            if current is not None:
                raise Conflict(
                    f"proposal {id_v} already has open review round {current.number} "
                    f"(patch v{current.patch_version}); attach a new patch version to start another"
                )
            version = get_version(conn, id_v, proposal.current_version)
            review = open_round(
                conn, self.config, proposal, files=list(version.files), actor=actor, reason="requested"
            )
            set_status(conn, id_v, ProposalStatus.IN_REVIEW)
            settle_status(conn, self.config, load_proposal(conn, id_v), actor=actor)
            return proposal_view(conn, self.config, load_proposal(conn, id_v)), review

        return self.db.write(write)

    def _voter_role(self, proposal: Proposal, agent_id: str) -> str:
        role = self.config.agents.get(agent_id)
        if role is None:
            raise Forbidden(f"agent {agent_id!r} is not in the roster ([agents] in config.toml)")
        if agent_id == proposal.agent_id:
            raise Forbidden(f"agent {agent_id!r} wrote proposal {proposal.id} and may not vote on it")
        if role == ADVISORY_ROLE:
            raise Forbidden(f"agent {agent_id!r} is a {ADVISORY_ROLE}: advisory only, it can never vote")
        return role

    def cast(
        self, *, proposal_id: object, agent_id: object, vote: object, reason_md: object, actor: str
    ) -> CastResult:
        """``vote.cast``: record a vote on the current patch version and settle consensus."""
        vote_v = check_choice("vote", vote, Vote)
        id_v = check_object_id("proposal_id", proposal_id)
        agent_v = check_agent_id(agent_id)
        reason_v = check_text("reason_md", reason_md, limit=MAX_BODY_CHARS)

        def write(conn: sqlite3.Connection) -> CastResult:
            proposal = load_proposal(conn, id_v)
            role = self._voter_role(proposal, agent_v)
            review = _open_round(conn, id_v)
            if review is None:
                raise Conflict(f"proposal {id_v} has no open review round (status {proposal.status})")
            if not any(c["agent_id"] == agent_v for c in review.candidates):
                roles = ", ".join(review.voting_roles)
                raise Forbidden(
                    f"agent {agent_v!r} ({role}) is not a voter of this round (voting roles: {roles})"
                )
            version = proposal.current_version
            previous = next((v for v in counting_votes(conn, id_v, version) if v.agent_id == agent_v), None)
            now = utc_now_iso()
            cast = Ballot(
                id=new_id("vote"),
                proposal_id=id_v,
                round_id=review.id,
                agent_id=agent_v,
                role=role,
                patch_version=version,
                vote=vote_v,
                reason_md=reason_v,
                replaces=previous.id if previous else None,
                actor=actor,
                created_at=now,
                counts=True,
            )
            conn.execute(
                "INSERT INTO votes (id, proposal_id, round_id, agent_id, role, patch_version, vote,"
                " reason_md, replaces, actor, created_at) VALUES (:id, :proposal_id, :round_id, :agent_id,"
                " :role, :patch_version, :vote, :reason_md, :replaces, :actor, :created_at)",
                as_dict(cast),
            )
            proposal_event(
                conn,
                "vote.cast",
                proposal,
                actor=actor,
                payload={
                    "vote_id": cast.id,
                    "agent_id": agent_v,
                    "role": role,
                    "vote": vote_v,
                    "patch_version": version,
                    "round_id": review.id,
                    "replaces": cast.replaces,
                },
            )
            status, consensus = settle_status(conn, self.config, load_proposal(conn, id_v), actor=actor)
            return CastResult(cast, consensus, status)

        return self.db.write(write)

    def list(
        self, *, proposal_id: object, patch_version: object = None, counting_only: object = False
    ) -> tuple[list[Ballot], dict[str, Any]]:
        """``vote.list``: every vote on record (cast order) with ``counts``, and the consensus."""
        id_v = check_object_id("proposal_id", proposal_id)
        version_v = None if patch_version is None else check_int("patch_version", patch_version, minimum=1)
        if not isinstance(counting_only, bool):
            raise InvalidArgument("counting_only must be a boolean")

        def read(conn: sqlite3.Connection) -> tuple[list[Ballot], dict[str, Any]]:
            proposal = load_proposal(conn, id_v)
            counting = {v.id for v in counting_votes(conn, id_v, proposal.current_version)}
            sql = "SELECT * FROM votes WHERE proposal_id = ?"
            params: list[Any] = [id_v]
            if version_v is not None:
                sql += " AND patch_version = ?"
                params.append(version_v)
            rows = conn.execute(sql + " ORDER BY rowid", params).fetchall()
            votes = [ballot_from_row(r, counts=r["id"] in counting) for r in rows]
            if counting_only:
                votes = [v for v in votes if v.counts]
            return votes, evaluate_consensus(conn, self.config, proposal).to_dict()

        return self.db.read(read)
