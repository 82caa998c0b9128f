"""The HTTP API under ``/api/v1``: memory curation, proposals and their timelines, the event log.

Routes are module-level endpoints over the services in ``request.app.state``; request bodies are
strict pydantic models; every error answers the one JSON shape of :mod:`capabilities.http_api._errors`.
The service that mounts this API beside MCP and the console is :mod:`capabilities.serving`.
"""

from __future__ import annotations

from capabilities.http_api._boundary import operator_of
from capabilities.http_api._errors import EXCEPTION_HANDLERS, endpoint, json_response
from capabilities.http_api._memories import memory_routes
from capabilities.http_api._openapi import openapi_document
from capabilities.http_api._stream import EventBroadcaster, EventStreamEndpoint
from capabilities.http_api._work import proposal_detail, read_patch, work_routes

__all__ = [
    "EXCEPTION_HANDLERS",
    "EventBroadcaster",
    "EventStreamEndpoint",
    "endpoint",
    "json_response",
    "memory_routes",
    "openapi_document",
    "operator_of",
    "proposal_detail",
    "read_patch",
    "work_routes",
]
