"""Running a review round: the oracle and every configured voting reviewer, launched at once.

:func:`run_review` is the explicit action behind ``roundtable review run P``, the ``review.run``
MCP tool and ``POST /api/v1/proposals/{id}/review-run``. Requesting a review still starts
nothing; running one:

1. opens a round for the current patch version if none is open (``proposal.request_review``);
2. plans a launch for the MemoryOracle and for every candidate of the round that has a
   ``[launches."<agent id>"]`` section (a reviewer that cannot be planned, say a test reviewer
   in a project that is not a git work tree, is reported and the others still run);
3. runs them all at once, each waiting for a slot (``max_concurrent_launches``), each with its own
   capability, container and clean-up: one reviewer's crash, timeout, OOM or cancellation leaves
   the others running;
4. answers the outcome: each launch (agent, role, status, exit), the votes on the current patch
   version, the oracle's warnings, and the consensus.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio
import structlog

from store import Store
from store.errors import Conflict, RoundtableError, error_body
from supervisor.launch import LaunchPlan, PhaseReporter, report_phase
from supervisor.review._plans import reviewer_plan

if TYPE_CHECKING:
    from supervisor._supervisor import LaunchResult, Supervisor

__all__ = ["ReviewRun", "ReviewerOutcome", "run_review"]

_log = structlog.get_logger("roundtable.review")


@dataclass
class ReviewerOutcome:
    """How one launch of a review run ended (or why it never started)."""

    agent_id: str
    role: str
    kind: str
    launch: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """``{"agent_id", "role", "kind", "launch", "error", "seconds"}``."""
        return {
            "agent_id": self.agent_id,
            "role": self.role,
            "kind": self.kind,
            "launch": self.launch,
            "error": self.error,
            "seconds": round(self.seconds, 3),
        }


@dataclass
class ReviewRun:
    """The outcome of :func:`run_review`."""

    proposal_id: str
    round: dict[str, Any]
    launches: list[ReviewerOutcome] = field(default_factory=list)
    votes: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[dict[str, Any]] = field(default_factory=list)
    consensus: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape every interface answers."""
        return {
            "proposal_id": self.proposal_id,
            "round": self.round,
            "launches": [outcome.to_dict() for outcome in self.launches],
            "votes": self.votes,
            "warnings": self.warnings,
            "consensus": self.consensus,
            "seconds": round(self.seconds, 3),
        }


async def _open_round(store: Store, proposal: dict[str, Any], actor: str) -> dict[str, Any]:
    """The proposal's open round for its current version, opened now if there is none."""
    current = proposal.get("review_round")
    if (
        current
        and current.get("status") == "open"
        and current.get("patch_version") == proposal["current_version"]
    ):
        return dict(current)
    try:
        _, review = await store.db.run(store.reviews.request_review, proposal_id=proposal["id"], actor=actor)
        return review.to_dict()
    except Conflict:
        # Opened meanwhile by someone else: use theirs.
        fresh = await store.db.run(store.proposals.get, proposal["id"])
        if fresh.get("review_round") and fresh["review_round"].get("status") == "open":
            return dict(fresh["review_round"])
        raise


async def run_review(
    supervisor: Supervisor,
    proposal_id: str,
    *,
    actor: str = "operator",
    on_phase: PhaseReporter | None = None,
    oracle_provider: str | None = None,
) -> ReviewRun:
    """Run a review round of ``proposal_id`` and wait for every launch to end (module docstring)."""
    started = time.monotonic()
    store = supervisor.store
    proposal = await supervisor.open_proposal(proposal_id)
    review = await _open_round(store, proposal, actor)
    run = ReviewRun(proposal_id=proposal_id, round=review)
    planned: list[tuple[ReviewerOutcome, LaunchPlan]] = []
    oracle = supervisor.oracle_plan(provider=oracle_provider)
    planned.append((ReviewerOutcome(oracle.agent_id, oracle.role, oracle.provider), oracle))
    for candidate in review.get("candidates", []):
        agent_id = str(candidate["agent_id"])
        if agent_id not in store.config.launches:
            continue
        kind = str(store.config.launches[agent_id].kind)
        try:
            plan = await reviewer_plan(store, agent_id, proposal)
        except RoundtableError as exc:
            run.launches.append(ReviewerOutcome(agent_id, "", kind, error=error_body(exc)["error"]))
            continue
        planned.append((ReviewerOutcome(agent_id, plan.role, kind), plan))
    await report_phase(
        on_phase, "round", {"round": review.get("number"), "agents": [p.agent_id for _, p in planned]}
    )

    async def one(outcome: ReviewerOutcome, plan: LaunchPlan) -> None:
        begun = time.monotonic()
        try:
            result: LaunchResult = await supervisor.launch(plan, proposal, on_phase=on_phase)
            outcome.launch = result.to_dict()
        except RoundtableError as exc:
            outcome.error = error_body(exc)["error"]
        except Exception as exc:  # one reviewer's failure must not stop the others
            _log.exception("review_launch_crashed", agent_id=plan.agent_id)
            outcome.error = {"code": "launch_failed", "message": f"{type(exc).__name__}: {exc}"}
        finally:
            outcome.seconds = time.monotonic() - begun

    async with anyio.create_task_group() as group:
        for outcome, plan in planned:
            run.launches.append(outcome)
            group.start_soon(one, outcome, plan)
    votes, consensus = await store.db.run(
        store.reviews.list, proposal_id=proposal_id, patch_version=int(review["patch_version"])
    )
    run.votes = [vote.to_dict() for vote in votes]
    run.consensus = consensus
    run.warnings = [w for o in run.launches if o.launch for w in o.launch.get("warnings", [])]
    run.seconds = time.monotonic() - started
    return run
