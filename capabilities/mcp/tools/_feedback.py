"""Maintainers' feedback on oracle warnings: ``oracle.feedback`` and ``oracle.stats``.

Both are operator tools (capabilities/policy.py); a MemoryOracle capability is refused them, so an
oracle can never grade its own warnings. ``oracle.feedback`` writes one ``memory.oracle_feedback``
event and never edits the warning; each operator's latest verdict on a warning is the one that
counts (:mod:`store._feedback` says how verdicts combine). ``oracle.stats`` answers the counts and
precision per provider.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from capabilities.mcp._registry import ToolArgs, ToolCall, ToolResult, ToolSpec
from capabilities.mcp._results import Event
from store import MAX_REASON_CHARS, OracleFeedback
from store.errors import Forbidden

__all__ = ["TOOLS"]


class FeedbackArgs(ToolArgs):
    """Arguments of ``oracle.feedback``."""

    warning_event_id: int = Field(description="The ID of a memory.oracle_warning event.")
    verdict: Literal["confirmed", "dismissed"] = Field(description="Whether the warning was right.")
    reason: str | None = Field(
        default=None, description=f"Optional, at most {MAX_REASON_CHARS} characters: why."
    )


class StatsArgs(ToolArgs):
    """Arguments of ``oracle.stats`` (none)."""


class FeedbackResult(ToolResult):
    """The answer of ``oracle.feedback``: the ``memory.oracle_feedback`` event written."""

    event: Event


class ProviderStats(ToolResult):
    """How one provider's warnings were judged."""

    provider: str
    warnings: int
    confirmed: int
    dismissed: int
    unreviewed: int
    precision: float | None = Field(description="confirmed / (confirmed + dismissed); null if none reviewed.")


class StatsResult(ToolResult):
    """The answer of ``oracle.stats``."""

    providers: list[ProviderStats]


def _operator_only(call: ToolCall) -> OracleFeedback:
    if not call.principal.is_operator:  # the policy already refuses; this says so a second time
        raise Forbidden("only an operator may give or read feedback on oracle warnings")
    return OracleFeedback(call.services.store.db)


async def _feedback(call: ToolCall) -> FeedbackResult:
    args: FeedbackArgs = call.args
    feedback = _operator_only(call)
    committed = await call.services.store.db.run(
        feedback.give, args.warning_event_id, args.verdict, actor=call.principal.actor, reason=args.reason
    )
    return FeedbackResult.model_validate(committed.body)


async def _stats(call: ToolCall) -> StatsResult:
    return StatsResult.model_validate(await call.services.store.db.run(_operator_only(call).stats))


TOOLS = [
    ToolSpec(
        name="oracle.feedback",
        description="Mark an oracle warning confirmed or dismissed, with an optional short reason. Writes "
        "one memory.oracle_feedback event; the warning itself is never changed. Your latest verdict on a "
        "warning replaces your earlier ones. not_found if no event has the ID, invalid_argument if the "
        "event is not a memory.oracle_warning; nothing is written then.",
        args_model=FeedbackArgs,
        handler=_feedback,
        title="Judge an oracle warning",
        result_model=FeedbackResult,
        read_only=False,
        destructive=False,
        idempotent=False,
    ),
    ToolSpec(
        name="oracle.stats",
        description="Per oracle provider (from the warning's launch; 'unknown' if none): warnings, "
        "confirmed, dismissed, unreviewed and precision = confirmed / (confirmed + dismissed), null "
        "when no warning was reviewed.",
        args_model=StatsArgs,
        handler=_stats,
        title="Oracle precision per provider",
        result_model=StatsResult,
        read_only=True,
        idempotent=True,
    ),
]
