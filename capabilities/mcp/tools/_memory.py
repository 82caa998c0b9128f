"""The four memory tools: ``memory.query``, ``memory.record``, ``memory.summarize``, ``memory.mark_stale``.

For a capability principal the scopes come from its grant: queries and summaries default to the
allowed scopes, a scope or filter outside them is ``forbidden``, and recorded entries carry the
grant's proposal as ``source_proposal_id``. Whoever is not an operator (a capability, an agent)
may replace (``memory_id``) only entries it wrote, as the store recorded from its credential
(:class:`~store.memory.MemoryWriter`), never the operator's decisions, and never sets an entry's
lifecycle state (``status``).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from capabilities.mcp._registry import BuiltAnswer, ToolArgs, ToolCall, ToolResult, ToolSpec
from capabilities.mcp._results import MemoryEntry
from capabilities.policy import record_scopes
from capabilities.principals import Principal
from store.errors import Forbidden

__all__ = ["TOOLS"]


class QueryArgs(ToolArgs):
    """Arguments of ``memory.query``."""

    query: Any = Field(
        default=None,
        description="Text to count in title, body, scope and kind (lower-cased, not trimmed). "
        "Empty or omitted: every entry matches and scores its importance.",
        # Any value is accepted (the contract treats a non-string as empty), but a string or null
        # is what a client should send; null is the default, so the schema must allow it.
        json_schema_extra={"anyOf": [{"type": "string"}, {"type": "null"}]},
    )
    scope: str | None = Field(default=None, description="Exact, case-sensitive scope filter.")
    kind: str | None = Field(default=None, description="Exact, case-sensitive kind filter.")
    limit: int | None = Field(default=None, description="Default 10; zero or negative returns all matches.")
    exclude_stale: bool = Field(default=False, description="Leave out entries whose status is stale.")
    match: Literal["substring", "ranked"] = Field(
        default="substring", description='"ranked" uses full-text BM25 ranking with any-word matching.'
    )


def _array_of_objects(schema: dict[str, Any]) -> None:
    """Advertise ``checks`` as an array of objects with no default: omitted means none (its
    Python default, None, is not an array, so advertising it would make the schema lie)."""
    schema.pop("default", None)
    schema.update(type="array", items={"type": "object"})


class RecordArgs(ToolArgs):
    """Arguments of ``memory.record``."""

    scope: str = Field(description="'project', a task ID, or another free-form scope.")
    kind: str = Field(description="decision, constraint, fact, summary, ...")
    title: str = Field(description="A short title.")
    body_md: str = Field(description="Markdown body.")
    source_event_id: int | None = Field(
        default=None, description="The event this entry comes from; 0 for none."
    )
    importance: int | None = Field(default=None, description="Default 50; 0 becomes 50.")
    memory_id: str | None = Field(
        default=None, description="Replace this entry's core fields (full replacement); omit to create."
    )
    status: str | None = Field(default=None, description="Default 'active'.")
    checks: Any = Field(
        default=None,
        description="Executable checks (decision or constraint only; at most 20): "
        '[{"kind": "forbid_added"|"require_kept", "pattern": regex, "paths"?: [glob], "message"?: text}]. '
        "Validated by the store (invalid_argument); replaced with the entry. See docs/memory.md.",
        json_schema_extra=_array_of_objects,
    )


class SummarizeArgs(ToolArgs):
    """Arguments of ``memory.summarize``."""

    scope: str | None = Field(default=None, description="Compared with each entry's scope.")
    task_id: str | None = Field(default=None, description="Compared with each entry's scope.")
    proposal_id: str | None = Field(default=None, description="Compared with each entry's scope.")


class MarkStaleArgs(ToolArgs):
    """Arguments of ``memory.mark_stale``."""

    memory_id: str = Field(description="The entry to mark stale.")
    reason_md: str = Field(description="Why it no longer holds.")


class EntriesResult(ToolResult):
    """The answer of ``memory.query``."""

    entries: list[MemoryEntry]


class EntryResult(ToolResult):
    """The answer of ``memory.record`` and ``memory.mark_stale``."""

    entry: MemoryEntry


class SummaryResult(ToolResult):
    """The answer of ``memory.summarize``."""

    entries: list[MemoryEntry]
    entry_count: int
    summary_md: str


def _scopes(principal: Principal) -> frozenset[str] | None:
    return principal.grant.scopes if principal.grant is not None else None


async def _query(call: ToolCall) -> BuiltAnswer:
    args: QueryArgs = call.args
    allowed = _scopes(call.principal)
    if allowed is not None and args.scope not in (None, "") and args.scope not in allowed:
        raise Forbidden(f"scope {args.scope!r} is outside this capability's scopes")
    store = call.services.store
    entries = await store.db.run(
        store.memory.query_core,
        args.query,
        scope=args.scope,
        kind=args.kind,
        limit=args.limit,
        exclude_stale=args.exclude_stale,
        match=args.match,
        allowed_scopes=allowed,
    )
    # The entries' core projection, built from their rows, is EntriesResult's JSON as it is: rows
    # of our own database, not re-validated on every query (tests/capabilities/mcp/test_built_answers.py).
    return BuiltAnswer(EntriesResult, {"entries": entries})


async def _record(call: ToolCall) -> EntryResult:
    args: RecordArgs = call.args
    grant = call.principal.grant
    # Scope first: a capability naming a scope outside its grant is refused as such, whatever
    # else is wrong with the arguments.
    writable = None if grant is None else record_scopes(grant)
    if writable is not None and args.scope not in writable:
        raise Forbidden(f"scope {args.scope!r} is outside the scopes this capability records in")
    if args.memory_id not in (None, ""):
        await _refuse_foreign_entry(call, str(args.memory_id))
    # A capability's entries carry its proposal, stay in its scopes, and need its grant live.
    bound: dict[str, Any] = {}
    if grant is not None:
        bound = {
            "source_proposal_id": grant.proposal_id,
            "allowed_scopes": writable,
            "grant_id": grant.id,
        }
    store = call.services.store
    entry = await store.db.run(
        store.memory.record,
        **args.model_dump(),
        actor=call.principal.actor,
        writer=call.principal.memory_writer,
        **bound,
    )
    return EntryResult(entry=MemoryEntry.model_validate(entry.core()))


async def _refuse_foreign_entry(call: ToolCall, memory_id: str) -> None:
    """Only an entry's writer (or an operator) may replace it.

    The project's durable decisions are not an agent's or the oracle's to rewrite: a patch under
    review could talk the model into "updating" the very constraint it breaks. This early check
    makes a foreign ID ``forbidden`` whatever else is wrong with the call; the store checks the
    same rule again inside its write transaction, so an entry created meanwhile cannot slip past.
    """
    writer = call.principal.memory_writer
    if writer.curator:
        return
    store = call.services.store
    if not await store.db.run(store.memory.may_replace, memory_id, writer):
        raise Forbidden(
            f"memory entry {memory_id} was written by someone else; only its writer may replace it"
        )


async def _summarize(call: ToolCall) -> SummaryResult:
    args: SummarizeArgs = call.args
    grant = call.principal.grant
    if grant is not None:
        if args.scope not in (None, "") and args.scope not in grant.scopes:
            raise Forbidden(f"scope {args.scope!r} is outside this capability's scopes")
        if args.task_id not in (None, "", grant.task_id):
            raise Forbidden(f"task {args.task_id!r} is not this capability's task")
        if args.proposal_id not in (None, "", grant.proposal_id):
            raise Forbidden(f"proposal {args.proposal_id!r} is not this capability's proposal")
    store = call.services.store
    result = await store.db.run(
        store.memory.summarize,
        scope=args.scope,
        task_id=args.task_id,
        proposal_id=args.proposal_id,
        allowed_scopes=grant.scopes if grant is not None else None,
    )
    return SummaryResult.model_validate(result.to_dict())


async def _mark_stale(call: ToolCall) -> EntryResult:
    args: MarkStaleArgs = call.args
    store = call.services.store
    entry = await store.db.run(
        store.memory.mark_stale,
        memory_id=args.memory_id,
        reason_md=args.reason_md,
        actor=call.principal.actor,
    )
    return EntryResult(entry=MemoryEntry.model_validate(entry.core()))


TOOLS = [
    ToolSpec(
        name="memory.query",
        description="Search memory entries. Scores count occurrences of the whole query in title, body, "
        "scope and kind; ordered by score, importance, then id. Stale entries are included unless "
        "exclude_stale is true: read each entry's status.",
        args_model=QueryArgs,
        handler=_query,
        title="Search memory",
        result_model=EntriesResult,
        read_only=True,
        idempotent=True,
    ),
    ToolSpec(
        name="memory.record",
        description="Record a durable decision, constraint or fact. With memory_id, fully replaces that "
        "entry's core fields (omitted optional fields reset to defaults) and keeps created_at.",
        args_model=RecordArgs,
        handler=_record,
        title="Record a memory entry",
        result_model=EntryResult,
        destructive=True,
        idempotent=False,
    ),
    ToolSpec(
        name="memory.summarize",
        description="A deterministic Markdown list of non-stale entries, by importance then id. Every "
        "supplied filter is compared with the entry's scope. Nothing is persisted.",
        args_model=SummarizeArgs,
        handler=_summarize,
        title="Summarize memory",
        result_model=SummaryResult,
        read_only=True,
        idempotent=True,
    ),
    ToolSpec(
        name="memory.mark_stale",
        description="Mark an entry stale and append the reason to its body.",
        args_model=MarkStaleArgs,
        handler=_mark_stale,
        title="Mark a memory entry stale",
        result_model=EntryResult,
        destructive=True,
        idempotent=False,
    ),
]
