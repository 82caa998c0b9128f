"""The MemoryOracle's own tools: ``task.history``, ``patch.inspect`` and ``oracle.warn``.

For a capability, each takes its proposal ``P`` and task ``T`` from the grant, never from
arguments. The optional ``proposal_id``/``task_id`` arguments exist so that a caller naming another
proposal or task is told ``forbidden`` (rather than having the argument silently ignored); naming
its own is allowed. ``task.history`` and ``oracle.warn`` need a capability; ``patch.inspect`` is
also how operators and roster agents read a patch, naming the proposal (and optionally a version).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from capabilities.mcp._registry import ToolArgs, ToolCall, ToolResult, ToolSpec
from capabilities.mcp._results import Decision, Event, MemoryEntry, Proposal, ProposalSummary, Task
from capabilities.principals import Principal
from store import (
    MAX_CITATIONS,
    MAX_EVIDENCE,
    MAX_EVIDENCE_LINE,
    MAX_EVIDENCE_TEXT,
    GrantRecord,
    OracleStore,
)
from store.errors import Forbidden, InvalidArgument

__all__ = ["DEFAULT_INSPECT_BYTES", "MAX_INSPECT_BYTES", "TOOLS", "bound_grant"]

DEFAULT_INSPECT_BYTES = 65_536
MAX_INSPECT_BYTES = 1_048_576

_PROPOSAL_FIELD = Field(default=None, description="Optional; must be this capability's own proposal.")
_TASK_FIELD = Field(default=None, description="Optional; must be this capability's own task.")


class HistoryArgs(ToolArgs):
    """Arguments of ``task.history`` (none needed: the grant fixes the task)."""

    proposal_id: str | None = _PROPOSAL_FIELD
    task_id: str | None = _TASK_FIELD


class InspectArgs(ToolArgs):
    """Arguments of ``patch.inspect``."""

    version: int | None = Field(
        default=None,
        description="A patch version (default: the current one). A capability reads only its current one.",
        ge=1,
    )

    max_bytes: int = Field(
        default=DEFAULT_INSPECT_BYTES,
        description=f"How many bytes of the patch to return (default {DEFAULT_INSPECT_BYTES}, "
        f"at most {MAX_INSPECT_BYTES}); 'truncated' says whether the content was cut.",
    )
    proposal_id: str | None = Field(
        default=None,
        description="The proposal. Required without a capability; a capability may name only its own.",
        max_length=200,
    )


class EvidenceArgs(ToolArgs):
    """One patch line a warning rests on, quoted."""

    path: str = Field(description="A file the current patch version touches (as patch.inspect lists it).")
    line: int = Field(description=f"The line's number in that file, 1 to {MAX_EVIDENCE_LINE}.")
    text: str = Field(description=f"The line as the patch has it, at most {MAX_EVIDENCE_TEXT} characters.")


class WarnArgs(ToolArgs):
    """Arguments of ``oracle.warn``."""

    message_md: str = Field(description="The warning, in Markdown, for the reviewers.")
    cited_memory_ids: list[str] = Field(
        description=f"One to {MAX_CITATIONS} memory IDs: active entries in the task or project scope."
    )
    cited_event_ids: list[int] | None = Field(
        default=None, description="Optional event IDs from task.history that support the warning."
    )
    severity: Literal["info", "warning", "critical"] = Field(default="warning")
    confidence: float | None = Field(
        default=None, description="Optional: how sure the oracle is that the patch conflicts, 0 to 1."
    )
    evidence: list[EvidenceArgs] | None = Field(
        default=None,
        description=f"Optional: up to {MAX_EVIDENCE} patch lines the warning rests on, quoted "
        "(each on a file the patch touches; otherwise invalid_argument and nothing is written).",
    )
    proposal_id: str | None = _PROPOSAL_FIELD
    task_id: str | None = _TASK_FIELD


class Truncated(ToolResult):
    """Which lists of ``task.history`` had more than 100 items."""

    proposals: bool
    decisions: bool
    events: bool
    memories: bool


class HistoryResult(ToolResult):
    """The answer of ``task.history``."""

    task: Task
    proposal: Proposal
    proposals: list[ProposalSummary]
    decisions: list[Decision]
    events: list[Event]
    memories: list[MemoryEntry]
    truncated: Truncated


class InspectResult(ToolResult):
    """The answer of ``patch.inspect``."""

    proposal_id: str
    version: int
    sha256: str
    size_bytes: int
    content: str
    truncated: bool
    files: list[str]


class EventResult(ToolResult):
    """The answer of ``oracle.warn`` (and ``oracle.feedback``): the one event written."""

    event: Event


def bound_grant(
    principal: Principal, *, proposal_id: str | None = None, task_id: str | None = None
) -> GrantRecord:
    """The caller's grant, refusing callers without one and arguments naming another proposal or task."""
    grant = principal.grant
    if grant is None:
        raise Forbidden("this tool needs a capability bound to a proposal")
    if proposal_id not in (None, "", grant.proposal_id):
        raise Forbidden(f"proposal {proposal_id!r} is not this capability's proposal")
    if task_id not in (None, "", grant.task_id):
        raise Forbidden(f"task {task_id!r} is not this capability's task")
    return grant


def _oracle(call: ToolCall) -> OracleStore:
    store = call.services.store
    return OracleStore(store.db, store.config)


async def _history(call: ToolCall) -> HistoryResult:
    args: HistoryArgs = call.args
    grant = bound_grant(call.principal, proposal_id=args.proposal_id, task_id=args.task_id)
    return HistoryResult.model_validate(await call.services.store.db.run(_oracle(call).history, grant))


def _utf8_prefix(data: bytes, limit: int) -> str:
    """The longest prefix of at most ``limit`` bytes that ends on a character boundary."""
    cut = data[:limit]
    for trim in range(4):  # a UTF-8 character is at most four bytes
        try:
            return cut[: len(cut) - trim].decode("utf-8")
        except UnicodeDecodeError:
            continue
    return cut.decode("utf-8", errors="replace")


async def _inspect(call: ToolCall) -> InspectResult:
    args: InspectArgs = call.args
    # A capability naming another proposal is refused as such, whatever else is wrong.
    grant = (
        None if call.principal.grant is None else bound_grant(call.principal, proposal_id=args.proposal_id)
    )
    if grant is not None and args.version is not None:
        raise Forbidden("a capability reads only its proposal's current patch version")
    if not 1 <= args.max_bytes <= MAX_INSPECT_BYTES:
        raise InvalidArgument(f"max_bytes must lie between 1 and {MAX_INSPECT_BYTES}")
    store = call.services.store
    # The whole file is read and hashed (a prefix cannot be verified); only the answer is cut.
    if grant is not None:
        version = await store.db.run(_oracle(call).patch_version, grant)
        data = await store.db.run(store.patches.read_verified, version)
    elif args.proposal_id in (None, ""):
        raise InvalidArgument("patch.inspect: proposal_id is required")
    else:
        version, data = await store.db.run(store.proposals.patch, args.proposal_id, args.version)
    return InspectResult(
        proposal_id=version.proposal_id,
        version=version.version,
        sha256=version.sha256,
        size_bytes=len(data),
        content=_utf8_prefix(data, args.max_bytes),
        truncated=len(data) > args.max_bytes,
        files=list(version.files),
    )


async def _warn(call: ToolCall) -> EventResult:
    args: WarnArgs = call.args
    grant = bound_grant(call.principal, proposal_id=args.proposal_id, task_id=args.task_id)
    event = await call.services.store.db.run(
        _oracle(call).warn,
        grant,
        message_md=args.message_md,
        cited_memory_ids=args.cited_memory_ids,
        cited_event_ids=args.cited_event_ids,
        severity=args.severity,
        confidence=args.confidence,
        evidence=None if args.evidence is None else [item.model_dump() for item in args.evidence],
    )
    return EventResult.model_validate({"event": event})


TOOLS = [
    ToolSpec(
        name="task.history",
        description="The history of this capability's task: the task and proposal, then newest first "
        "(at most 100 each) its proposals, decisions on it or its proposals, its events and launch events, "
        "and active memory entries in the task or project scope; 'truncated' says which lists had more.",
        args_model=HistoryArgs,
        handler=_history,
        title="Task history",
        result_model=HistoryResult,
        read_only=True,
        idempotent=True,
    ),
    ToolSpec(
        name="patch.inspect",
        description="A proposal's patch version (a capability: its own proposal's current one): its content "
        "(up to max_bytes), SHA-256, size and the files it touches. Read without following symlinks and "
        "verified against the recorded SHA-256 (unsafe_path / artifact_mismatch otherwise).",
        args_model=InspectArgs,
        handler=_inspect,
        title="Inspect a patch",
        result_model=InspectResult,
        read_only=True,
        idempotent=True,
    ),
    ToolSpec(
        name="oracle.warn",
        description="Warn the reviewers that the patch may conflict with prior decisions or constraints. "
        "Every cited memory must exist, be active and lie in the task or project scope, and cited events "
        "must belong to the task's history; otherwise invalid_citation and nothing is written. Optionally "
        "give your confidence (0..1) and the patch lines the warning rests on (evidence). Writes one "
        "memory.oracle_warning event; changes no proposal, vote or decision.",
        args_model=WarnArgs,
        handler=_warn,
        title="Warn the reviewers",
        result_model=EventResult,
        read_only=False,
        destructive=False,
        idempotent=False,
    ),
]
