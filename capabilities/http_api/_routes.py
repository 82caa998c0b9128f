"""The route table of ``/api/v1``: memories, work, the live event stream and the OpenAPI document."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from capabilities.http_api._boundary import operator_of
from capabilities.http_api._errors import endpoint, json_response
from capabilities.http_api._feedback import FEEDBACK_ROUTES
from capabilities.http_api._memories import MEMORY_ROUTES
from capabilities.http_api._openapi import openapi_document
from capabilities.http_api._state import api_state
from capabilities.http_api._stream import EventStreamEndpoint
from capabilities.http_api._work import WORK_ROUTES

__all__ = ["api_routes"]


async def openapi(request: Request) -> Response:
    """``GET /openapi.json``: the API's OpenAPI document."""
    operator_of(request)
    return json_response(openapi_document())


async def authorize_operator(request: Request) -> None:
    """Let an operator open (and keep) the live stream while their token is live."""
    principal = operator_of(request)
    if principal.credential_id is not None:  # still live? (asked again while streaming)
        store = api_state(request).store
        await store.db.run(store.grants.require_live_credential, principal.credential_id)


def api_routes(*, write_timeout: float = 10.0, heartbeat: float = 15.0) -> list[BaseRoute]:
    """The routes of ``/api/v1`` (relative paths); the timings are the live stream's."""
    stream = EventStreamEndpoint(authorize_operator, write_timeout=write_timeout, heartbeat=heartbeat)
    return [
        *MEMORY_ROUTES,
        *WORK_ROUTES,
        *FEEDBACK_ROUTES,
        Route("/events/stream", stream, methods=["GET"]),
        Route("/openapi.json", endpoint(openapi), methods=["GET"]),
    ]
