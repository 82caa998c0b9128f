"""The proposal tools: create, attach a patch version, get, list, request review, timeline.

``proposal.create`` and ``proposal.attach_patch`` take the unified diff as text (``patch``); it
is parsed and validated before anything is written, and stored as an immutable patch version
(a file under ``.roundtable/patches/`` before its row with SQLite, a row with PostgreSQL).
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from capabilities.mcp._registry import ToolArgs, ToolCall, ToolResult, ToolSpec
from capabilities.mcp._results import PatchVersion, Proposal, ReviewRound, TimelineEvent
from capabilities.policy import Reach, acting_agent, reach_of, require_author
from store.errors import Forbidden
from store.work import MAX_BODY_CHARS, MAX_LIST_ITEMS, MAX_TITLE_CHARS, ProposalStatusWord, RiskWord

__all__ = ["TOOLS"]


def _proposal_id() -> Any:
    return Field(description="The proposal (P-...).", max_length=200)


class CreateArgs(ToolArgs):
    """Arguments of ``proposal.create``."""

    task_id: str = Field(description="The task (T-...) the proposal belongs to.", max_length=200)
    agent_id: str | None = Field(
        default=None,
        description="The authoring agent, a roster entry (e.g. implementer-1). An agent's own credential "
        "fixes it: omit it, or name yourself (naming another agent is forbidden). Operators must name one.",
        max_length=200,
    )
    title: str = Field(description="A short title.", max_length=MAX_TITLE_CHARS)
    patch: str = Field(description="The unified diff (git-style or diff -u), at most policy.max_patch_bytes.")
    summary_md: str = Field(
        default="", description="What the change does and why.", max_length=MAX_BODY_CHARS
    )
    risk: RiskWord | None = Field(
        default=None, description="low, normal, high or critical (default: the task's)."
    )
    affected_resources: list[str] = Field(
        default_factory=list,
        description="Services, tables, APIs the change affects.",
        max_length=MAX_LIST_ITEMS,
    )
    expected_tests: list[str] = Field(
        default_factory=list, description="Tests expected to pass.", max_length=MAX_LIST_ITEMS
    )
    rollback_notes_md: str = Field(
        default="", description="How to roll the change back.", max_length=MAX_BODY_CHARS
    )


class AttachArgs(ToolArgs):
    """Arguments of ``proposal.attach_patch``."""

    proposal_id: str = _proposal_id()
    patch: str = Field(description="The new unified diff; becomes the next immutable version.")


class ProposalArgs(ToolArgs):
    """Arguments naming one proposal."""

    proposal_id: str = _proposal_id()


class ListArgs(ToolArgs):
    """Arguments of ``proposal.list``."""

    task_id: str | None = Field(default=None, description="Only this task's proposals.", max_length=200)
    status: ProposalStatusWord | None = Field(default=None, description="Only proposals with this status.")
    limit: int | None = Field(default=None, description="Page size, 1..500 (default 50).", ge=1, le=500)
    cursor: str | None = Field(default=None, description="next_cursor of the previous page.", max_length=200)


class CreatedResult(ToolResult):
    """The answer of ``proposal.create``."""

    proposal: Proposal
    patch: PatchVersion


class AttachedResult(CreatedResult):
    """The answer of ``proposal.attach_patch``: also the votes that stopped counting."""

    invalidated_vote_ids: list[str]


class ProposalResult(ToolResult):
    """The answer of ``proposal.get``."""

    proposal: Proposal


class ProposalPageResult(ToolResult):
    """The answer of ``proposal.list``."""

    proposals: list[Proposal]
    next_cursor: str | None


class RoundResult(ToolResult):
    """The answer of ``proposal.request_review``."""

    proposal: Proposal
    round: ReviewRound


class TimelineResult(ToolResult):
    """The answer of ``proposal.timeline``."""

    proposal: Proposal
    events: list[TimelineEvent]


async def _create(call: ToolCall) -> CreatedResult:
    args: CreateArgs = call.args
    store = call.services.store
    proposal, patch = await store.db.run(
        store.proposals.create,
        task_id=args.task_id,
        agent_id=acting_agent(call.principal, args.agent_id),
        title=args.title,
        patch=args.patch,
        summary_md=args.summary_md,
        risk=args.risk,
        affected_resources=list(args.affected_resources),
        expected_tests=list(args.expected_tests),
        rollback_notes_md=args.rollback_notes_md,
        actor=call.principal.actor,
    )
    return CreatedResult.model_validate({"proposal": proposal, "patch": patch.to_dict()})


async def _require_author(call: ToolCall, proposal_id: str, tool: str) -> None:
    """An agent attaches patches to, and requests review of, only the proposals it authored."""
    if reach_of(call.principal, tool) is Reach.OWN:
        store = call.services.store
        # The author of a proposal never changes, so this read cannot go stale before the write.
        proposal = await store.db.run(store.proposals.get, proposal_id)
        require_author(call.principal, proposal["agent_id"], tool=tool)


async def _attach(call: ToolCall) -> AttachedResult:
    args: AttachArgs = call.args
    await _require_author(call, args.proposal_id, "proposal.attach_patch")
    store = call.services.store
    proposal, patch, invalidated = await store.db.run(
        store.proposals.attach_patch,
        proposal_id=args.proposal_id,
        patch=args.patch,
        actor=call.principal.actor,
    )
    return AttachedResult.model_validate(
        {"proposal": proposal, "patch": patch.to_dict(), "invalidated_vote_ids": invalidated}
    )


def _bound(call: ToolCall, proposal_id: str) -> None:
    """A capability reads only its own proposal."""
    grant = call.principal.grant
    if grant is not None and proposal_id != grant.proposal_id:
        raise Forbidden(f"proposal {proposal_id!r} is not this capability's proposal")


async def _get(call: ToolCall) -> ProposalResult:
    args: ProposalArgs = call.args
    _bound(call, args.proposal_id)
    store = call.services.store
    proposal = await store.db.run(store.proposals.get, args.proposal_id)
    return ProposalResult.model_validate({"proposal": proposal})


async def _list(call: ToolCall) -> ProposalPageResult:
    args: ListArgs = call.args
    store = call.services.store
    proposals, cursor = await store.db.run(
        store.proposals.list, task_id=args.task_id, status=args.status, limit=args.limit, cursor=args.cursor
    )
    return ProposalPageResult.model_validate({"proposals": proposals, "next_cursor": cursor})


async def _request_review(call: ToolCall) -> RoundResult:
    args: ProposalArgs = call.args
    await _require_author(call, args.proposal_id, "proposal.request_review")
    store = call.services.store
    proposal, review = await store.db.run(
        store.reviews.request_review, proposal_id=args.proposal_id, actor=call.principal.actor
    )
    return RoundResult.model_validate({"proposal": proposal, "round": review.to_dict()})


async def _timeline(call: ToolCall) -> TimelineResult:
    args: ProposalArgs = call.args
    _bound(call, args.proposal_id)
    store = call.services.store
    return TimelineResult.model_validate(await store.db.run(store.timeline.timeline, args.proposal_id))


TOOLS = [
    ToolSpec(
        name="proposal.create",
        description="Propose a patch for a task: the diff is validated and stored as immutable patch "
        "version 1. Answers the proposal and the patch version (sha256, size, touched files).",
        args_model=CreateArgs,
        handler=_create,
        title="Propose a patch",
        result_model=CreatedResult,
    ),
    ToolSpec(
        name="proposal.attach_patch",
        description="Attach a new immutable patch version. Votes on older versions stay on record but stop "
        "counting; an open review round is replaced by one for the new version.",
        args_model=AttachArgs,
        handler=_attach,
        title="Attach a new patch version",
        result_model=AttachedResult,
    ),
    ToolSpec(
        name="proposal.get",
        description="One proposal: fields, status, every patch version, the latest review round and "
        "consensus.",
        args_model=ProposalArgs,
        handler=_get,
        title="Get a proposal",
        result_model=ProposalResult,
        read_only=True,
        idempotent=True,
    ),
    ToolSpec(
        name="proposal.list",
        description="Proposals, oldest first, filtered by task and status, a page at a time.",
        args_model=ListArgs,
        handler=_list,
        title="List proposals",
        result_model=ProposalPageResult,
        read_only=True,
        idempotent=True,
    ),
    ToolSpec(
        name="proposal.request_review",
        description="Open a review round for the current patch version: voting roles, candidate voters "
        "(never the author) and the advisory MemoryOracle (launched: false). Starts no process.",
        args_model=ProposalArgs,
        handler=_request_review,
        title="Request review",
        result_model=RoundResult,
    ),
    ToolSpec(
        name="proposal.timeline",
        description="The proposal's events, oldest first: patch versions with hashes, review rounds, votes "
        "(with their version and whether they count now), decisions, launches, oracle warnings with their "
        "cited memory entries, apply and reject.",
        args_model=ProposalArgs,
        handler=_timeline,
        title="Proposal timeline",
        result_model=TimelineResult,
        read_only=True,
        idempotent=True,
    ),
]
