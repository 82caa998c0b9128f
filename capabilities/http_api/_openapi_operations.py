"""The operations of ``/api/v1``: one :class:`Operation` per route, in the table :data:`OPERATIONS`.

Each entry names the route's method and path, its summary and tag, its parameters, the component
schemas of its request and success bodies, and the error statuses it can answer with.
:mod:`capabilities.http_api._openapi` turns the table into the OpenAPI document, adding what every
mutation shares (the ``X-Actor-ID`` and ``Idempotency-Key`` headers, 403 and 409) and the error
responses; the two routes it describes by hand (the event stream and the document itself) are not
in the table.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["OPERATIONS", "STRING_SCHEMA", "Operation", "query_param"]


def query_param(
    name: str, schema: dict[str, Any], description: str, *, required: bool = False
) -> dict[str, Any]:
    """An OpenAPI query parameter ``name`` with ``schema``."""
    return {"name": name, "in": "query", "required": required, "schema": schema, "description": description}


def _path(name: str) -> dict[str, Any]:
    """A required path parameter ``name``: an ID of 1 to 200 characters."""
    return {
        "name": name,
        "in": "path",
        "required": True,
        "schema": {"type": "string", "minLength": 1, "maxLength": 200},
    }


STRING_SCHEMA = {"type": "string", "maxLength": 1000}
_LIMIT_200 = {"type": "integer", "minimum": 1, "maximum": 200, "default": 50}
_CURSOR = query_param(
    "cursor", {"type": "string", "maxLength": 1000}, "the opaque next_cursor of the previous page"
)
_MEMORY_ID = _path("memory_id")
_PROPOSAL_ID = _path("proposal_id")
_WARNING_EVENT_ID = {
    "name": "event_id",
    "in": "path",
    "required": True,
    "schema": {"type": "integer", "minimum": 1, "maximum": 10**18 - 1},
    "description": "the ID of a memory.oracle_warning event",
}
_TARGET = query_param(
    "target_id", {"type": "string", "minLength": 1, "maxLength": 200}, "the other entry", required=True
)


@dataclass(frozen=True)
class Operation:
    """One route of the API as the document describes it."""

    method: str
    path: str
    operation_id: str
    summary: str
    tag: str
    response: str | None  # component schema of the success body; None for text/plain
    status: int = 200
    parameters: tuple[dict[str, Any], ...] = ()
    body: str | None = None  # component schema of the request body
    body_required: bool = False
    errors: tuple[int, ...] = field(default=(400, 404))

    @property
    def mutation(self) -> bool:
        """Whether this operation changes state (needs X-Actor-ID, accepts Idempotency-Key)."""
        return self.method == "POST"


def _action(name: str, summary: str) -> Operation:
    """``POST /memories/{memory_id}/<name>``: an empty-bodied action answering with the entry."""
    return Operation(
        "POST",
        f"/memories/{{memory_id}}/{name}",
        f"{name}Memory",
        summary,
        "memory",
        "MemoryAnswer",
        parameters=(_MEMORY_ID,),
        body="EmptyBody",
        errors=(400, 404, 409),
    )


OPERATIONS: tuple[Operation, ...] = (
    Operation(
        "GET",
        "/memories",
        "listMemories",
        "List memory entries, oldest first; archived entries only with status=archived",
        "memory",
        "MemoryPage",
        parameters=(
            query_param(
                "q", STRING_SCHEMA, "trimmed, case-insensitive literal substring of the title or body"
            ),
            query_param("scope", STRING_SCHEMA, "exact scope (trimmed)"),
            query_param("kind", STRING_SCHEMA, "exact kind (trimmed)"),
            query_param("status", STRING_SCHEMA, "exact status (trimmed); archived lists archived entries"),
            query_param("limit", _LIMIT_200, "page size, 1..200"),
            _CURSOR,
        ),
        errors=(400,),
    ),
    Operation(
        "POST",
        "/memories",
        "createMemory",
        "Create a memory entry (revision 1, provenance edges, secrets redacted)",
        "memory",
        "MemoryAnswer",
        status=201,
        body="MemoryCreate",
        body_required=True,
        errors=(400,),
    ),
    Operation(
        "GET",
        "/memories/{memory_id}",
        "getMemory",
        "One memory entry (archived included); follow_aliases resolves to the canonical entry",
        "memory",
        "MemoryDetail",
        parameters=(
            _MEMORY_ID,
            query_param("follow_aliases", {"type": "boolean", "default": False}, "resolve the alias chain"),
        ),
        errors=(400, 404, 409),
    ),
    Operation(
        "GET",
        "/memories/{memory_id}/revisions",
        "listRevisions",
        "The revision history, by revision number",
        "memory",
        "RevisionList",
        parameters=(_MEMORY_ID,),
        errors=(404,),
    ),
    Operation(
        "POST",
        "/memories/{memory_id}/revisions",
        "createRevision",
        "Revise the body (and title); 409 when expected_revision is not the current revision",
        "memory",
        "RevisionAnswer",
        parameters=(_MEMORY_ID,),
        body="RevisionCreate",
        body_required=True,
        errors=(400, 404, 409),
    ),
    Operation(
        "GET",
        "/memories/{memory_id}/diff",
        "diffRevisions",
        "Unified diff of title and body between two revisions",
        "memory",
        "Diff",
        parameters=(
            _MEMORY_ID,
            query_param(
                "from", {"type": "string", "default": "1", "maxLength": 20}, "a revision number or latest"
            ),
            query_param(
                "to", {"type": "string", "default": "latest", "maxLength": 20}, "a revision number or latest"
            ),
        ),
        errors=(404,),
    ),
    Operation(
        "GET",
        "/memories/{memory_id}/graph",
        "aliasGraph",
        "Alias rows, the resolved canonical chain (with cycle detection) and the IDs resolving here",
        "memory",
        "Graph",
        parameters=(_MEMORY_ID,),
        errors=(404,),
    ),
    Operation(
        "GET",
        "/memories/{memory_id}/source-chain",
        "sourceChain",
        "Provenance edges, following memory sources down to depth levels; missing sources marked",
        "memory",
        "SourceChain",
        parameters=(
            _MEMORY_ID,
            query_param(
                "depth", {"type": "integer", "minimum": 1, "maximum": 10, "default": 1}, "levels to follow"
            ),
        ),
        errors=(400, 404),
    ),
    Operation(
        "POST",
        "/memories/{memory_id}/merge",
        "mergeMemory",
        "Merge into a new canonical M-merge entry; both inputs become merged and aliases of it",
        "memory",
        "MergeAnswer",
        status=201,
        parameters=(_MEMORY_ID, _TARGET),
        body="EmptyBody",
        errors=(400, 404, 409),
    ),
    Operation(
        "POST",
        "/memories/{memory_id}/merge-legacy",
        "mergeMemoryLegacy",
        "The legacy merge: mark this entry merged with merged_into in its provenance",
        "memory",
        "MemoryAnswer",
        parameters=(_MEMORY_ID, _TARGET),
        body="EmptyBody",
        errors=(400, 404, 409),
    ),
    _action("pin", "Pin an unpinned live entry"),
    _action("unpin", "Unpin a pinned entry"),
    _action("archive", "Archive a live entry (its status is kept for restore)"),
    _action("restore", "Restore an archived entry to its status before archiving"),
    Operation(
        "POST",
        "/memories/{memory_id}/resynthesize",
        "resynthesizeMemory",
        "Record a resynthesis request; it moves to completed or failed when the provider fulfils it",
        "memory",
        "ResynthesisAnswer",
        status=202,
        parameters=(_MEMORY_ID,),
        body="ResynthesisCreate",
        errors=(400, 404, 409),
    ),
    Operation(
        "GET",
        "/proposals",
        "listProposals",
        "List proposals with status and consensus",
        "work",
        "ProposalPage",
        parameters=(
            query_param("status", STRING_SCHEMA, "one proposal status"),
            query_param("task_id", STRING_SCHEMA, "proposals of one task"),
            query_param("limit", _LIMIT_200, "page size, 1..200"),
            _CURSOR,
        ),
        errors=(400,),
    ),
    Operation(
        "GET",
        "/proposals/{proposal_id}",
        "getProposal",
        "One proposal with its patch versions, votes (and whether each counts) and consensus",
        "work",
        "ProposalDetail",
        parameters=(_PROPOSAL_ID,),
    ),
    Operation(
        "GET",
        "/proposals/{proposal_id}/timeline",
        "proposalTimeline",
        "The proposal's timeline, oldest first",
        "work",
        "Timeline",
        parameters=(_PROPOSAL_ID,),
    ),
    Operation(
        "GET",
        "/proposals/{proposal_id}/patch",
        "proposalPatch",
        "The current (or given) patch version as text, verified against its SHA-256",
        "work",
        None,
        parameters=(
            _PROPOSAL_ID,
            query_param("version", {"type": "integer", "minimum": 1}, "a patch version"),
        ),
        errors=(400, 404, 409),
    ),
    Operation(
        "POST",
        "/proposals/{proposal_id}/review-run",
        "runReview",
        "Run a review round (the review.run tool): the oracle and every configured reviewer in "
        "containers; answers when all have ended",
        "work",
        "ReviewRunAnswer",
        parameters=(_PROPOSAL_ID,),
        errors=(404, 409, 503),
    ),
    Operation(
        "GET",
        "/events",
        "listEvents",
        "Events after an ID, oldest first",
        "events",
        "EventPage",
        parameters=(
            query_param(
                "after", {"type": "integer", "minimum": 0, "default": 0}, "the last event ID already seen"
            ),
            query_param(
                "limit", {"type": "integer", "minimum": 1, "maximum": 500, "default": 100}, "page size"
            ),
            query_param("proposal_id", STRING_SCHEMA, "events of one proposal"),
        ),
        errors=(400,),
    ),
    Operation(
        "POST",
        "/warnings/{event_id}/feedback",
        "giveOracleFeedback",
        "Confirm or dismiss an oracle warning: one memory.oracle_feedback event; the warning is unchanged",
        "oracle",
        "FeedbackAnswer",
        status=201,
        parameters=(_WARNING_EVENT_ID,),
        body="FeedbackCreate",
        body_required=True,
    ),
    Operation(
        "GET",
        "/oracle/stats",
        "oracleStats",
        "Per oracle provider: warnings, confirmed, dismissed, unreviewed and precision",
        "oracle",
        "OracleStats",
        errors=(),
    ),
)
"""Every route under ``/api/v1`` except the two the document describes by hand (stream, itself)."""
