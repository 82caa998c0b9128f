"""Review outcome tools: ``vote.cast``, ``vote.list``, ``decision.record``, ``patch.reject``,
``patch.validate`` and ``patch.apply``.

A vote is cast on behalf of a roster agent; eligibility (the open round's candidates, never the
author, never the MemoryOracle) is enforced by the store. Who votes comes from the credential: an
agent votes only as itself (:func:`~capabilities.policy.acting_agent`), a capability only on its own
proposal; operators name the agent they vote for.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from capabilities.mcp._registry import ToolArgs, ToolCall, ToolResult, ToolSpec
from capabilities.mcp._results import ApplyTransaction, Check, Consensus, Decision, Proposal, Vote
from capabilities.policy import acting_agent
from store.errors import Forbidden
from store.work import MAX_BODY_CHARS, DecisionOutcomeWord, ProposalStatusWord, VoteWord

__all__ = ["TOOLS"]


def _proposal_id() -> Any:
    return Field(description="The proposal (P-...).", max_length=200)


class CastArgs(ToolArgs):
    """Arguments of ``vote.cast``."""

    proposal_id: str = _proposal_id()
    agent_id: str | None = Field(
        default=None,
        description="The voting agent, a candidate of the open round. An agent's own credential fixes it: "
        "omit it, or name yourself (naming another agent is forbidden). Operators must name one.",
        max_length=200,
    )
    vote: VoteWord = Field(description="approve, approve_with_notes, revise, reject, veto or abstain.")
    reason_md: str = Field(description="Why; Markdown.", max_length=MAX_BODY_CHARS)


class ListArgs(ToolArgs):
    """Arguments of ``vote.list``."""

    proposal_id: str = _proposal_id()
    patch_version: int | None = Field(default=None, description="Only votes on this patch version.", ge=1)
    counting_only: bool = Field(default=False, description="Only the votes that count now.")


class DecisionArgs(ToolArgs):
    """Arguments of ``decision.record``."""

    outcome: DecisionOutcomeWord = Field(description="accepted, rejected, withdrawn, deferred or noted.")
    rationale_md: str = Field(
        description="The decision and its reasons; Markdown.", max_length=MAX_BODY_CHARS
    )
    proposal_id: str | None = Field(default=None, description="The proposal decided on.", max_length=200)
    task_id: str | None = Field(
        default=None, description="The task decided on (implied by proposal_id).", max_length=200
    )
    supersedes: str | None = Field(
        default=None, description="The decision (D-...) this one replaces.", max_length=200
    )


class RejectArgs(ToolArgs):
    """Arguments of ``patch.reject``."""

    proposal_id: str = _proposal_id()
    reason_md: str = Field(description="Why the patch is rejected.", max_length=MAX_BODY_CHARS)


class ValidateArgs(ToolArgs):
    """Arguments of ``patch.validate``."""

    proposal_id: str = _proposal_id()
    version: int | None = Field(default=None, description="A patch version (default: the current one).", ge=1)


class ApplyArgs(ToolArgs):
    """Arguments of ``patch.apply``."""

    proposal_id: str = _proposal_id()


class CastResult(ToolResult):
    """The answer of ``vote.cast``."""

    vote: Vote
    consensus: Consensus
    proposal_status: ProposalStatusWord


class VotesResult(ToolResult):
    """The answer of ``vote.list``."""

    votes: list[Vote]
    consensus: Consensus


class DecisionResult(ToolResult):
    """The answer of ``decision.record`` and ``patch.reject``."""

    decision: Decision
    proposal: Proposal | None


class ValidationResult(ToolResult):
    """The answer of ``patch.validate``: each check, and whether all passed."""

    proposal_id: str
    version: int
    sha256: str
    files: list[str]
    checks: list[Check]
    ok: bool


class ApplyResult(ToolResult):
    """The answer of ``patch.apply``."""

    proposal: Proposal
    transaction: ApplyTransaction
    checks: list[Check]


def _check_binding(call: ToolCall, proposal_id: str | None, agent_id: str | None = None) -> None:
    grant = call.principal.grant
    if grant is None:
        return
    if proposal_id is not None and proposal_id != grant.proposal_id:
        raise Forbidden(f"proposal {proposal_id!r} is not this capability's proposal")
    if agent_id is not None and agent_id != grant.agent_id:
        raise Forbidden(f"this capability acts as {grant.agent_id!r}, not {agent_id!r}")


async def _cast(call: ToolCall) -> CastResult:
    args: CastArgs = call.args
    _check_binding(call, args.proposal_id, args.agent_id)
    store = call.services.store
    result = await store.db.run(
        store.reviews.cast,
        proposal_id=args.proposal_id,
        agent_id=acting_agent(call.principal, args.agent_id),
        vote=args.vote,
        reason_md=args.reason_md,
        actor=call.principal.actor,
    )
    return CastResult.model_validate(result.to_dict())


async def _list(call: ToolCall) -> VotesResult:
    args: ListArgs = call.args
    store = call.services.store
    votes, consensus = await store.db.run(
        store.reviews.list,
        proposal_id=args.proposal_id,
        patch_version=args.patch_version,
        counting_only=args.counting_only,
    )
    return VotesResult.model_validate({"votes": [vote.to_dict() for vote in votes], "consensus": consensus})


async def _decide(call: ToolCall) -> DecisionResult:
    args: DecisionArgs = call.args
    _check_binding(call, args.proposal_id)
    store = call.services.store
    decision, proposal = await store.db.run(
        store.decisions.record,
        outcome=args.outcome,
        rationale_md=args.rationale_md,
        proposal_id=args.proposal_id,
        task_id=args.task_id,
        supersedes=args.supersedes,
        actor=call.principal.actor,
    )
    return DecisionResult.model_validate({"decision": decision.to_dict(), "proposal": proposal})


async def _reject(call: ToolCall) -> DecisionResult:
    args: RejectArgs = call.args
    _check_binding(call, args.proposal_id)
    store = call.services.store
    decision, proposal = await store.db.run(
        store.decisions.reject,
        proposal_id=args.proposal_id,
        reason_md=args.reason_md,
        actor=call.principal.actor,
    )
    return DecisionResult.model_validate({"proposal": proposal, "decision": decision.to_dict()})


async def _validate(call: ToolCall) -> ValidationResult:
    args: ValidateArgs = call.args
    store = call.services.store
    result = await store.db.run(store.workspace.validate, proposal_id=args.proposal_id, version=args.version)
    return ValidationResult.model_validate(result.to_dict())


async def _apply(call: ToolCall) -> ApplyResult:
    args: ApplyArgs = call.args
    _check_binding(call, args.proposal_id)
    store = call.services.store
    actor = call.principal.actor
    applied = await store.db.run(store.workspace.apply, proposal_id=args.proposal_id, actor=actor)
    return ApplyResult.model_validate(applied)


TOOLS = [
    ToolSpec(
        name="vote.cast",
        description="Cast a vote for a candidate agent of the open round, bound to the current patch "
        "version. A re-vote replaces the agent's counting vote (both stay on record). Answers the vote, "
        "the consensus after it and the proposal's status.",
        args_model=CastArgs,
        handler=_cast,
        title="Cast a vote",
        result_model=CastResult,
    ),
    ToolSpec(
        name="vote.list",
        description="Every vote on record, in cast order, each with its patch version and whether it counts "
        "now; and the consensus.",
        args_model=ListArgs,
        handler=_list,
        title="List votes",
        result_model=VotesResult,
        read_only=True,
        idempotent=True,
    ),
    ToolSpec(
        name="decision.record",
        description="Record an immutable decision about a proposal or a task; a new decision may "
        "supersede an older one. rejected/withdrawn close the proposal; accepted needs consensus.",
        args_model=DecisionArgs,
        handler=_decide,
        title="Record a decision",
        result_model=DecisionResult,
        destructive=True,
    ),
    ToolSpec(
        name="patch.reject",
        description="Reject the proposal's patch: status rejected, the open round closed, a decision "
        "recorded.",
        args_model=RejectArgs,
        handler=_reject,
        title="Reject a patch",
        result_model=DecisionResult,
        destructive=True,
    ),
    ToolSpec(
        name="patch.validate",
        description="Check a patch version against the project without changing it; each check reported "
        "separately: artifact_integrity, parse, paths_inside_repo, applies_cleanly, git_apply_check.",
        args_model=ValidateArgs,
        handler=_validate,
        title="Validate a patch",
        result_model=ValidationResult,
        read_only=True,
        idempotent=True,
    ),
    ToolSpec(
        name="patch.apply",
        description="Apply the current patch version to the project. Requires consensus; re-validates; "
        "writes a rollback artifact first; records a transaction with before/after state hashes; "
        "restores the files if anything fails part-way.",
        args_model=ApplyArgs,
        handler=_apply,
        title="Apply a patch",
        result_model=ApplyResult,
        destructive=True,
    ),
]
