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

from capabilities.mcp._registry import ToolArgs, ToolCall, ToolSpec
from capabilities.policy import acting_agent
from store.errors import Forbidden
from store.work import MAX_BODY_CHARS, DecisionOutcomeWord, VoteWord

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


def _check_binding(call: ToolCall, proposal_id: str | None, agent_id: str | None = None) -> None:
    grant = call.principal.grant
    if grant is None:
        return
    if proposal_id is not None and proposal_id != grant.proposal_id:
        raise Forbidden(f"proposal {proposal_id!r} is not this capability's proposal")
    if agent_id is not None and agent_id != grant.agent_id:
        raise Forbidden(f"this capability acts as {grant.agent_id!r}, not {agent_id!r}")


async def _cast(call: ToolCall) -> dict[str, Any]:
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
    return result.to_dict()


async def _list(call: ToolCall) -> dict[str, Any]:
    args: ListArgs = call.args
    store = call.services.store
    votes, consensus = await store.db.run(
        store.reviews.list,
        proposal_id=args.proposal_id,
        patch_version=args.patch_version,
        counting_only=args.counting_only,
    )
    return {"votes": [vote.to_dict() for vote in votes], "consensus": consensus}


async def _decide(call: ToolCall) -> dict[str, Any]:
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
    return {"decision": decision.to_dict(), "proposal": proposal}


async def _reject(call: ToolCall) -> dict[str, Any]:
    args: RejectArgs = call.args
    _check_binding(call, args.proposal_id)
    store = call.services.store
    decision, proposal = await store.db.run(
        store.decisions.reject,
        proposal_id=args.proposal_id,
        reason_md=args.reason_md,
        actor=call.principal.actor,
    )
    return {"proposal": proposal, "decision": decision.to_dict()}


async def _validate(call: ToolCall) -> dict[str, Any]:
    args: ValidateArgs = call.args
    store = call.services.store
    result = await store.db.run(store.workspace.validate, proposal_id=args.proposal_id, version=args.version)
    return result.to_dict()


async def _apply(call: ToolCall) -> dict[str, Any]:
    args: ApplyArgs = call.args
    _check_binding(call, args.proposal_id)
    store = call.services.store
    return await store.db.run(store.workspace.apply, proposal_id=args.proposal_id, actor=call.principal.actor)


TOOLS = [
    ToolSpec(
        name="vote.cast",
        description="Cast a vote for a candidate agent of the open round, bound to the current patch "
        "version. A re-vote replaces the agent's counting vote (both stay on record). Answers the vote, "
        "the consensus after it and the proposal's status.",
        args_model=CastArgs,
        handler=_cast,
    ),
    ToolSpec(
        name="vote.list",
        description="Every vote on record, in cast order, each with its patch version and whether it counts "
        "now; and the consensus.",
        args_model=ListArgs,
        handler=_list,
        read_only=True,
        idempotent=True,
    ),
    ToolSpec(
        name="decision.record",
        description="Record an immutable decision about a proposal or a task; a new decision may "
        "supersede an older one. rejected/withdrawn close the proposal; accepted needs consensus.",
        args_model=DecisionArgs,
        handler=_decide,
        destructive=True,
    ),
    ToolSpec(
        name="patch.reject",
        description="Reject the proposal's patch: status rejected, the open round closed, a decision "
        "recorded.",
        args_model=RejectArgs,
        handler=_reject,
        destructive=True,
    ),
    ToolSpec(
        name="patch.validate",
        description="Check a patch version against the project without changing it; each check reported "
        "separately: artifact_integrity, parse, paths_inside_repo, applies_cleanly, git_apply_check.",
        args_model=ValidateArgs,
        handler=_validate,
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
        destructive=True,
    ),
]
