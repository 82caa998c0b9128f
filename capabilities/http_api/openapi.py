"""The OpenAPI 3.1 document of ``/api/v1``, generated from one table of operations.

Request-body schemas come from the pydantic models the routes validate with, so the document and
the validation cannot drift apart; the checked-in ``docs/openapi.json`` is this document (a test
compares the served document with it and with the mounted routes). Regenerate it with
``python -m capabilities.http_api > docs/openapi.json``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, TextIO

from pydantic.json_schema import models_json_schema

from capabilities.http_api.models import EmptyBody, MemoryCreate, ResynthesisCreate, RevisionCreate
from store.config import package_version

__all__ = ["OPERATIONS", "Operation", "openapi_document", "write_document"]

_REF = "#/components/schemas/{model}"


def _ref(name: str) -> dict[str, Any]:
    return {"$ref": f"#/components/schemas/{name}"}


def _query(name: str, schema: dict[str, Any], description: str, *, required: bool = False) -> dict[str, Any]:
    return {"name": name, "in": "query", "required": required, "schema": schema, "description": description}


def _path(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "in": "path",
        "required": True,
        "schema": {"type": "string", "minLength": 1, "maxLength": 200},
    }


_STRING = {"type": "string", "maxLength": 1000}
_LIMIT_200 = {"type": "integer", "minimum": 1, "maximum": 200, "default": 50}
_CURSOR = _query(
    "cursor", {"type": "string", "maxLength": 1000}, "the opaque next_cursor of the previous page"
)
_MEMORY_ID = _path("memory_id")
_PROPOSAL_ID = _path("proposal_id")
_TARGET = _query(
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
            _query("q", _STRING, "trimmed, case-insensitive literal substring of the title or body"),
            _query("scope", _STRING, "exact scope (trimmed)"),
            _query("kind", _STRING, "exact kind (trimmed)"),
            _query("status", _STRING, "exact status (trimmed); archived lists archived entries"),
            _query("limit", _LIMIT_200, "page size, 1..200"),
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
            _query("follow_aliases", {"type": "boolean", "default": False}, "resolve the alias chain"),
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
            _query(
                "from", {"type": "string", "default": "1", "maxLength": 20}, "a revision number or latest"
            ),
            _query(
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
            _query(
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
            _query("status", _STRING, "one proposal status"),
            _query("task_id", _STRING, "proposals of one task"),
            _query("limit", _LIMIT_200, "page size, 1..200"),
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
        parameters=(_PROPOSAL_ID, _query("version", {"type": "integer", "minimum": 1}, "a patch version")),
        errors=(400, 404, 409),
    ),
    Operation(
        "GET",
        "/events",
        "listEvents",
        "Events after an ID, oldest first",
        "events",
        "EventPage",
        parameters=(
            _query(
                "after", {"type": "integer", "minimum": 0, "default": 0}, "the last event ID already seen"
            ),
            _query("limit", {"type": "integer", "minimum": 1, "maximum": 500, "default": 100}, "page size"),
            _query("proposal_id", _STRING, "events of one proposal"),
        ),
        errors=(400,),
    ),
)
"""Every route under ``/api/v1`` except the two the document describes by hand (stream, itself)."""


def _object(required: list[str], properties: dict[str, Any] | None = None) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "required": required}
    if properties:
        schema["properties"] = properties
    return schema


_ANY_OBJECT = {"type": "object"}
_MEMORY_FIELDS = {
    "id": {"type": "string"},
    "workspace_id": {"type": ["string", "null"]},
    "scope": {"type": "string"},
    "kind": {"type": "string"},
    "title": {"type": "string"},
    "body_md": {"type": "string"},
    "tags": {"type": "array", "items": {"type": "string"}},
    "provenance": _ANY_OBJECT,
    "source_event_id": {"type": "integer"},
    "source_session_id": {"type": ["string", "null"]},
    "source_proposal_id": {"type": ["string", "null"]},
    "confidence": {"type": ["number", "null"]},
    "reliability": {"type": ["number", "null"]},
    "importance": {"type": "integer"},
    "status": {"type": "string"},
    "pinned": {"type": "boolean"},
    "revision": {"type": "integer"},
    "archived_at": {"type": ["string", "null"]},
    "resynthesis_status": {"type": ["string", "null"]},
    "created_at": {"type": "string"},
    "updated_at": {"type": "string"},
}


def _response_schemas() -> dict[str, Any]:
    page = {"next_cursor": {"type": ["string", "null"]}}
    return {
        "Error": _object(
            ["error"],
            {
                "error": _object(
                    ["code", "message"],
                    {"code": {"type": "string"}, "message": {"type": "string"}, "details": _ANY_OBJECT},
                )
            },
        ),
        "Memory": _object(list(_MEMORY_FIELDS), _MEMORY_FIELDS),
        "MemoryAnswer": _object(["memory"], {"memory": _ref("Memory")}),
        "MemoryDetail": _object(
            ["memory"],
            {
                "memory": _ref("Memory"),
                "requested_id": {"type": "string"},
                "resolved": {"type": "boolean"},
                "alias_chain": {"type": "array", "items": {"type": "string"}},
            },
        ),
        "MemoryPage": _object(
            ["items", "next_cursor"], {"items": {"type": "array", "items": _ref("Memory")}, **page}
        ),
        "Revision": _object(
            ["id", "memory_id", "revision", "title", "body_md", "reason", "actor", "created_at"]
        ),
        "RevisionList": _object(["items"], {"items": {"type": "array", "items": _ref("Revision")}}),
        "RevisionAnswer": _object(
            ["memory", "revision"], {"memory": _ref("Memory"), "revision": _ref("Revision")}
        ),
        "Diff": _object(
            ["from", "to", "changed", "diff"],
            {
                "from": {"type": "integer"},
                "to": {"type": "integer"},
                "changed": {"type": "boolean"},
                "title_changed": {"type": "boolean"},
                "body_changed": {"type": "boolean"},
                "diff": {"type": "string"},
            },
        ),
        "Graph": _object(["memory_id", "items", "canonical_chain", "canonical_id", "cycle", "aliased_from"]),
        "SourceChain": _object(["memory_id", "depth", "items"]),
        "MergeAnswer": _object(
            ["memory", "merged", "aliases"],
            {"memory": _ref("Memory"), "merged": {"type": "array", "items": _ref("Memory")}},
        ),
        "ResynthesisAnswer": _object(
            ["request", "memory"], {"request": _ANY_OBJECT, "memory": _ref("Memory")}
        ),
        "ProposalPage": _object(
            ["items", "next_cursor"], {"items": {"type": "array", "items": _ANY_OBJECT}, **page}
        ),
        "ProposalDetail": _object(["proposal", "votes", "consensus"]),
        "Timeline": _object(["proposal", "events"]),
        "Event": _object(["id", "type", "created_at", "actor", "task_id", "proposal_id", "payload"]),
        "EventPage": _object(
            ["items", "next_after", "more"],
            {"items": {"type": "array", "items": _ref("Event")}, "next_after": {"type": "integer"}},
        ),
    }


_ERROR_TEXT = {
    400: "invalid input (invalid_argument, or the route's code: invalid_memory, invalid_revision, ...)",
    401: "unauthenticated: no valid bearer token",
    403: "forbidden: X-Actor-ID differs from the token's name, or not an operator token",
    404: "not found (not_found, memory_not_found, revision_not_found, ...)",
    409: "conflict with the current state (the route's code, or conflict for a reused Idempotency-Key)",
}


def _operation(op: Operation) -> dict[str, Any]:
    parameters = list(op.parameters)
    if op.mutation:
        parameters += [
            {
                "name": "X-Actor-ID",
                "in": "header",
                "required": True,
                "schema": {"type": "string", "minLength": 1, "maxLength": 100},
                "description": "must equal the name of the operator token",
            },
            {
                "name": "Idempotency-Key",
                "in": "header",
                "required": False,
                "schema": {"type": "string", "pattern": "^[\\x21-\\x7e]{1,200}$"},
                "description": "a replay with the same key and request returns the first answer",
            },
        ]
    if op.response is None:
        success = {"description": "the patch", "content": {"text/plain": {"schema": {"type": "string"}}}}
    else:
        success = {"description": "success", "content": {"application/json": {"schema": _ref(op.response)}}}
    responses: dict[str, Any] = {str(op.status): success}
    for status in sorted({401, *op.errors, *((403, 409) if op.mutation else ())}):
        responses[str(status)] = {
            "description": _ERROR_TEXT[status],
            "content": {"application/json": {"schema": _ref("Error")}},
        }
    body: dict[str, Any] = {
        "operationId": op.operation_id,
        "summary": op.summary,
        "tags": [op.tag],
        "parameters": parameters,
        "responses": responses,
    }
    if op.body is not None:
        body["requestBody"] = {
            "required": op.body_required,
            "content": {"application/json": {"schema": _ref(op.body)}},
        }
    return body


def _manual_paths() -> dict[str, Any]:
    unauthorized = {
        "description": _ERROR_TEXT[401],
        "content": {"application/json": {"schema": _ref("Error")}},
    }
    return {
        "/events/stream": {
            "get": {
                "operationId": "streamEvents",
                "summary": "Live server-sent events (id, event = type, data = the event JSON)",
                "tags": ["events"],
                "x-streaming": True,
                "parameters": [
                    _query(
                        "after", {"type": "integer", "minimum": 0}, "start after this event ID (default: now)"
                    ),
                    _query("proposal_id", _STRING, "events of one proposal"),
                    {
                        "name": "Last-Event-ID",
                        "in": "header",
                        "required": False,
                        "schema": {"type": "string"},
                    },
                ],
                "responses": {
                    "200": {
                        "description": "the stream",
                        "content": {"text/event-stream": {"schema": {"type": "string"}}},
                    },
                    "400": {
                        "description": _ERROR_TEXT[400],
                        "content": {"application/json": {"schema": _ref("Error")}},
                    },
                    "401": unauthorized,
                },
            }
        },
        "/openapi.json": {
            "get": {
                "operationId": "openapi",
                "summary": "This document",
                "tags": ["meta"],
                "responses": {
                    "200": {
                        "description": "the OpenAPI document",
                        "content": {"application/json": {"schema": _ANY_OBJECT}},
                    },
                    "401": unauthorized,
                },
            }
        },
    }


def openapi_document() -> dict[str, Any]:
    """The OpenAPI document of ``/api/v1``."""
    _, definitions = models_json_schema(
        [(model, "validation") for model in (MemoryCreate, RevisionCreate, ResynthesisCreate, EmptyBody)],
        ref_template=_REF,
    )
    paths: dict[str, Any] = {}
    for op in OPERATIONS:
        paths.setdefault(op.path, {})[op.method.lower()] = _operation(op)
    paths.update(_manual_paths())
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Roundtable HTTP API",
            "version": package_version(),
            "description": "Memory curation and proposal inspection for maintainers. See docs/http-api.md.",
        },
        "servers": [{"url": "/api/v1"}],
        "security": [{"bearer": []}],
        "paths": dict(sorted(paths.items())),
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": dict(sorted({**definitions["$defs"], **_response_schemas()}.items())),
        },
    }


def write_document(stream: TextIO) -> None:
    """Write the document as the checked-in ``docs/openapi.json`` holds it."""
    json.dump(openapi_document(), stream, indent=2, ensure_ascii=False)
    stream.write("\n")
