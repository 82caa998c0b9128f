"""Review rounds, votes, consensus and decisions."""

from __future__ import annotations

from typing import Any

import pytest

from store import Store, list_events
from store.errors import Conflict, Forbidden, InvalidArgument, NotFound
from store.work._rounds import glob_match
from tests.helpers import project_snapshot
from tests.store.work_helpers import DIFF, DIFF_V2, SECURITY_DIFF, mint_oracle_grant, new_task


def _proposal(store: Store, patch: str = DIFF, *, risk: str | None = None, review: bool = True) -> str:
    task = new_task(store)
    proposal, _ = store.proposals.create(
        task_id=task.id, agent_id="implementer-1", title="t", patch=patch, risk=risk, actor="op"
    )
    if review:
        store.reviews.request_review(proposal_id=proposal["id"], actor="op")
    return str(proposal["id"])


def _vote(store: Store, proposal_id: str, agent: str, word: str) -> Any:
    return store.reviews.cast(
        proposal_id=proposal_id, agent_id=agent, vote=word, reason_md="because", actor="op"
    )


def _types(store: Store, proposal_id: str) -> list[str]:
    return [e.type for e in store.db.read(lambda conn: list_events(conn, proposal_id=proposal_id))]


def test_default_roster_round(store: Store) -> None:
    proposal_id = _proposal(store, review=False)
    view, review = store.reviews.request_review(proposal_id=proposal_id, actor="op")
    assert view["status"] == "in_review"
    assert review.voting_roles == ["Reviewer"]
    assert review.candidates == [
        {"agent_id": "reviewer-1", "role": "Reviewer"},
        {"agent_id": "reviewer-2", "role": "Reviewer"},
    ]
    assert review.advisory == [
        {"agent_id": "memory-oracle-1", "role": "MemoryOracle", "advisory": True, "launched": False}
    ]
    assert _types(store, proposal_id)[-1] == "proposal.review_requested"
    with pytest.raises(Conflict, match="already has open review round"):
        store.reviews.request_review(proposal_id=proposal_id, actor="op")


@pytest.mark.parametrize(("patch", "risk"), [(SECURITY_DIFF, None), (DIFF, "high"), (DIFF, "critical")])
def test_security_joins_for_high_risk_or_security_paths(store: Store, patch: str, risk: str | None) -> None:
    proposal_id = _proposal(store, patch, risk=risk)
    review = store.proposals.get(proposal_id)["review_round"]
    assert review["voting_roles"] == ["Reviewer", "Security"]
    assert {"agent_id": "security-1", "role": "Security"} in review["candidates"]
    # Two reviewer approvals are not enough: one Security approval is required.
    _vote(store, proposal_id, "reviewer-1", "approve")
    result = _vote(store, proposal_id, "reviewer-2", "approve")
    assert result.consensus.missing_roles == ["Security"] and not result.consensus.reached
    assert _vote(store, proposal_id, "security-1", "approve_with_notes").status == "accepted"


@pytest.mark.parametrize(
    ("path", "pattern", "expected"),
    [
        (".env", ".env*", True),
        ("app/.env.local", "**/.env*", True),
        ("auth/deep/x.py", "auth/**", True),
        ("src/auth/x.py", "**/auth/**", True),
        ("authz.py", "auth/**", False),
        ("poetry.lock", "*.lock", True),
        ("a/b/yarn.lock", "*.lock", False),
        (".github/workflows/ci.yml", ".github/workflows/**", True),
    ],
)
def test_glob_semantics(path: str, pattern: str, expected: bool) -> None:
    assert glob_match(path, pattern) is expected


@pytest.mark.parametrize(
    ("agent", "word", "error", "message"),
    [
        ("implementer-1", "approve", Forbidden, "wrote proposal"),
        ("memory-oracle-1", "approve", Forbidden, "can never vote"),
        ("stranger", "approve", Forbidden, "not in the roster"),
        ("security-1", "approve", Forbidden, "not a voter of this round"),
        ("reviewer-1", "lgtm", InvalidArgument, "vote must be one of"),
    ],
)
def test_ineligible_votes_are_refused_and_change_nothing(
    store: Store, agent: str, word: str, error: type[Exception], message: str
) -> None:
    proposal_id = _proposal(store)
    before = project_snapshot(store.paths)
    with pytest.raises(error, match=message):
        _vote(store, proposal_id, agent, word)
    assert project_snapshot(store.paths) == before


def test_no_open_round_is_a_conflict(store: Store) -> None:
    proposal_id = _proposal(store, review=False)
    with pytest.raises(Conflict, match="no open review round"):
        _vote(store, proposal_id, "reviewer-1", "approve")
    with pytest.raises(NotFound):
        _vote(store, "P-missing", "reviewer-1", "approve")


def test_consensus_reaches_accepted_and_a_later_veto_takes_it_back(store: Store) -> None:
    proposal_id = _proposal(store)
    first = _vote(store, proposal_id, "reviewer-1", "approve")
    assert first.status == "in_review" and first.consensus.approvals == 1
    second = _vote(store, proposal_id, "reviewer-2", "approve")
    assert second.status == "accepted" and second.consensus.reached
    assert _types(store, proposal_id)[-1] == "proposal.accepted"
    veto = _vote(store, proposal_id, "reviewer-1", "veto")
    assert veto.status == "in_review" and not veto.consensus.reached
    assert veto.consensus.blocking == [{"agent_id": "reviewer-1", "vote": "veto", "vote_id": veto.vote.id}]
    assert veto.vote.replaces == first.vote.id
    assert _types(store, proposal_id)[-1] == "proposal.consensus_lost"
    votes, consensus = store.reviews.list(proposal_id=proposal_id)
    assert [(v.agent_id, v.vote, v.counts) for v in votes] == [
        ("reviewer-1", "approve", False),
        ("reviewer-2", "approve", True),
        ("reviewer-1", "veto", True),
    ]
    assert consensus["approvals"] == 1
    counting, _ = store.reviews.list(proposal_id=proposal_id, counting_only=True)
    assert [v.vote for v in counting] == ["approve", "veto"]


def test_revise_requests_revision_and_a_new_version_voids_the_votes(store: Store) -> None:
    proposal_id = _proposal(store)
    approve = _vote(store, proposal_id, "reviewer-1", "approve")
    revise = _vote(store, proposal_id, "reviewer-2", "revise")
    assert revise.status == "revision_requested"
    view, v2, invalidated = store.proposals.attach_patch(proposal_id=proposal_id, patch=DIFF_V2, actor="op")
    assert set(invalidated) == {approve.vote.id, revise.vote.id}
    assert view["status"] == "in_review" and view["current_version"] == 2
    assert view["review_round"]["number"] == 2 and view["review_round"]["patch_version"] == 2
    assert view["consensus"]["approvals"] == 0 and view["consensus"]["counting_vote_ids"] == []
    assert _types(store, proposal_id)[-4:] == [
        "proposal.patch_attached",
        "proposal.reviews_invalidated",
        "proposal.review_requested",
        "proposal.status_changed",
    ]
    votes, _ = store.reviews.list(proposal_id=proposal_id)
    assert [(v.patch_version, v.counts) for v in votes] == [(1, False), (1, False)]
    for agent in ("reviewer-1", "reviewer-2"):
        result = _vote(store, proposal_id, agent, "approve")
    assert result.status == "accepted" and result.vote.patch_version == v2.version


def test_abstain_counts_as_a_vote_but_not_an_approval(store: Store) -> None:
    proposal_id = _proposal(store)
    _vote(store, proposal_id, "reviewer-1", "approve")
    result = _vote(store, proposal_id, "reviewer-2", "abstain")
    assert result.status == "in_review" and result.consensus.approvals == 1
    assert len(result.consensus.counting_vote_ids) == 2


def test_decisions_are_immutable_and_superseded_once(store: Store) -> None:
    proposal_id = _proposal(store)
    deferred, _ = store.decisions.record(
        outcome="deferred", rationale_md="later", proposal_id=proposal_id, actor="op"
    )
    rejected, view = store.decisions.record(
        outcome="rejected", rationale_md="no", proposal_id=proposal_id, supersedes=deferred.id, actor="op"
    )
    assert view is not None and view["status"] == "rejected" and view["review_round"]["status"] == "closed"
    assert rejected.supersedes == deferred.id and rejected.patch_version == 1
    with pytest.raises(Conflict, match="already superseded"):
        store.decisions.record(
            outcome="noted", rationale_md="x", proposal_id=proposal_id, supersedes=deferred.id, actor="op"
        )
    with pytest.raises(Conflict, match="immutable"):
        store.db.write(lambda conn: conn.execute("UPDATE decisions SET outcome = 'accepted'"))
    with pytest.raises(Conflict, match="no open review round"):
        _vote(store, proposal_id, "reviewer-1", "approve")
    assert _types(store, proposal_id)[-3:] == ["decision.recorded", "decision.recorded", "proposal.rejected"]


def test_accepted_decision_needs_consensus_and_task_decisions_need_a_task(store: Store) -> None:
    proposal_id = _proposal(store)
    with pytest.raises(Conflict, match="consensus"):
        store.decisions.record(outcome="accepted", rationale_md="ship", proposal_id=proposal_id, actor="op")
    task_id = store.proposals.get(proposal_id)["task_id"]
    note, view = store.decisions.record(outcome="noted", rationale_md="context", task_id=task_id, actor="op")
    assert view is None and note.task_id == task_id and note.proposal_id is None
    with pytest.raises(InvalidArgument):
        store.decisions.record(outcome="rejected", rationale_md="no", task_id=task_id, actor="op")
    with pytest.raises(InvalidArgument):
        store.decisions.record(outcome="noted", rationale_md="no", actor="op")
    with pytest.raises(NotFound):
        store.decisions.record(outcome="noted", rationale_md="no", task_id="T-missing", actor="op")


def test_grants_on_the_proposal_are_revoked_when_it_leaves_review(store: Store) -> None:
    proposal_id = _proposal(store)
    issued = mint_oracle_grant(store, proposal_id)
    _vote(store, proposal_id, "reviewer-1", "approve")
    _vote(store, proposal_id, "reviewer-2", "approve")
    revoked = store.db.read(
        lambda conn: conn.execute(
            "SELECT revoked_at, revoked_reason FROM capability_grants WHERE id = ?", (issued.record.id,)
        ).fetchone()
    )
    assert revoked["revoked_at"] is not None and revoked["revoked_reason"] == "proposal accepted"
    assert "capability.revoked" in _types(store, proposal_id)
