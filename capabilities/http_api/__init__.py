"""The HTTP API under ``/api/v1``: memory curation, proposals and their timelines, the event log.

Routes are module-level endpoints that read the services from ``request.app.state``
(:class:`ApiState`, set by whoever mounts :func:`api_routes`); request bodies are strict pydantic
models; every error answers the one JSON shape of :mod:`capabilities.http_api._errors`.
The service that mounts this API beside MCP and the console is :mod:`capabilities.serving`.
"""

from __future__ import annotations

from capabilities.http_api._errors import EXCEPTION_HANDLERS
from capabilities.http_api._openapi import openapi_document
from capabilities.http_api._routes import api_routes
from capabilities.http_api._state import ApiState, api_state
from capabilities.http_api._stream import EventBroadcaster, EventStreamEndpoint
from capabilities.http_api._work import proposal_detail

__all__ = [
    "EXCEPTION_HANDLERS",
    "ApiState",
    "EventBroadcaster",
    "EventStreamEndpoint",
    "api_routes",
    "api_state",
    "openapi_document",
    "proposal_detail",
]
