"""``review.run``: run a review round, every configured reviewer in its own container.

An operator tool. The call opens a round if none is open, launches the MemoryOracle and every
configured voting reviewer at once, and answers when every launch has ended: each launch, the
votes, the warnings and the consensus. It needs a process that can launch containers (the
services' ``review_runner``: ``roundtable serve`` and ``roundtable mcp stdio`` have one).
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from capabilities.mcp._registry import ToolArgs, ToolCall, ToolResult, ToolSpec
from capabilities.mcp._results import Consensus, ReviewRound, Vote
from store.errors import DockerUnavailable

__all__ = ["TOOLS"]


class RunArgs(ToolArgs):
    """Arguments of ``review.run``."""

    proposal_id: str = Field(description="The proposal (P-...) whose round to run.", max_length=200)


class ReviewerLaunch(ToolResult):
    """How one launch of the round ended, or why it never started."""

    agent_id: str
    role: str
    kind: str
    launch: dict[str, Any] | None = Field(description="The launch record (status, exit_code, warnings, ...).")
    error: dict[str, Any] | None = Field(description="The structured error if it could not run.")
    seconds: float


class ReviewRun(ToolResult):
    """One review round run to its end."""

    proposal_id: str
    round: ReviewRound
    launches: list[ReviewerLaunch]
    votes: list[Vote]
    warnings: list[dict[str, Any]]
    consensus: Consensus
    seconds: float


class RunResult(ToolResult):
    """The answer of ``review.run``."""

    review: ReviewRun


async def _run(call: ToolCall) -> RunResult:
    args: RunArgs = call.args
    store = call.services.store
    await store.db.run(store.proposals.get, args.proposal_id)  # not_found before anything else
    runner = call.services.review_runner
    if runner is None:
        raise DockerUnavailable("this server launches no containers; run `roundtable review run P --wait`")
    return RunResult.model_validate({"review": await runner(args.proposal_id, actor=call.principal.actor)})


TOOLS = [
    ToolSpec(
        name="review.run",
        description="Run a review round: open one if none is open, launch the MemoryOracle and every "
        "configured voting reviewer ([launches] in config.toml) in hardened containers at once, and "
        "answer when all have ended: each launch, the votes, the warnings and the consensus.",
        args_model=RunArgs,
        handler=_run,
        title="Run a review round",
        result_model=RunResult,
    ),
]
