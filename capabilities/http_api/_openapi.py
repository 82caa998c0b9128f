"""The OpenAPI 3.1 document of ``/api/v1``, assembled from the table of operations.

The routes are described once, in :data:`~capabilities.http_api.openapi_operations.OPERATIONS`;
this module turns each into an OpenAPI operation (adding the headers every mutation takes and the
error responses), adds the two routes described by hand (the event stream and this document), and
the component schemas. Request-body schemas come from the pydantic models the routes validate with,
so the document and the validation cannot drift apart; the checked-in ``docs/openapi.json`` is this
document (a test compares the served document with it and with the mounted routes). Regenerate it
with ``python -m capabilities.http_api > docs/openapi.json``.
"""

from __future__ import annotations

import json
from typing import Any, TextIO

from pydantic.json_schema import models_json_schema

from capabilities.http_api._feedback import FEEDBACK_SCHEMAS, FeedbackCreate
from capabilities.http_api._models import EmptyBody, MemoryCreate, ResynthesisCreate, RevisionCreate
from capabilities.http_api._openapi_operations import OPERATIONS, STRING_SCHEMA, Operation, query_param
from store.config import package_version

__all__ = ["OPERATIONS", "Operation", "openapi_document", "write_document"]

_REF = "#/components/schemas/{model}"


def _ref(name: str) -> dict[str, Any]:
    """A reference to the component schema ``name``."""
    return {"$ref": f"#/components/schemas/{name}"}


def _object(required: list[str], properties: dict[str, Any] | None = None) -> dict[str, Any]:
    """An object schema with ``required`` keys and, if given, the schemas of its ``properties``."""
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
    """The component schemas of the success and error bodies (the request bodies come from pydantic)."""
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
        "ReviewRunAnswer": _object(
            ["review"],
            {
                "review": _object(
                    ["proposal_id", "round", "launches", "votes", "warnings", "consensus", "seconds"],
                    {
                        "launches": {"type": "array", "items": _ANY_OBJECT},
                        "votes": {"type": "array", "items": _ANY_OBJECT},
                        "warnings": {"type": "array", "items": _ref("Event")},
                    },
                )
            },
        ),
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
    503: "unavailable: the Docker engine (docker_unavailable) or the database (store_busy)",
}


def _operation(op: Operation) -> dict[str, Any]:
    """The OpenAPI operation object of ``op``: parameters, request body and every response."""
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
    """The path items of the two routes not in the table: the event stream and this document."""
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
                    query_param(
                        "after", {"type": "integer", "minimum": 0}, "start after this event ID (default: now)"
                    ),
                    query_param("proposal_id", STRING_SCHEMA, "events of one proposal"),
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
        [
            (model, "validation")
            for model in (MemoryCreate, RevisionCreate, ResynthesisCreate, EmptyBody, FeedbackCreate)
        ],
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
            "schemas": dict(
                sorted({**definitions["$defs"], **_response_schemas(), **FEEDBACK_SCHEMAS}.items())
            ),
        },
    }


def write_document(stream: TextIO) -> None:
    """Write the document as the checked-in ``docs/openapi.json`` holds it."""
    json.dump(openapi_document(), stream, indent=2, ensure_ascii=False)
    stream.write("\n")
