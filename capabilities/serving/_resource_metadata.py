"""Protected-resource metadata (RFC 9728): how an MCP client learns what ``/mcp`` expects.

A 401 from a guarded path carries ``WWW-Authenticate: Bearer resource_metadata="..."`` (see
:mod:`capabilities.auth`); the URL it names is served here, unauthenticated, at the root
well-known path and at its path-inserted form for the resource ``/mcp`` (RFC 9728, 3.1). The
document says that ``/mcp`` takes a bearer token in the ``Authorization`` header and nowhere
else. It names no ``authorization_servers``: Roundtable has no OAuth authorization server, and
tokens are minted by the operator (``roundtable token create``). ``resource`` is built from the
request's scheme and ``Host`` (:func:`capabilities.auth.request_base_url`), so it is the URL the
client used; behind a reverse proxy, pass the original ``Host`` through.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Route
from starlette.types import Scope

from capabilities.auth import PROTECTED_RESOURCE_METADATA_PATH, request_base_url

__all__ = ["RESOURCE_METADATA_ROUTES", "resource_metadata"]

_MCP_PATH = "/mcp"


def resource_metadata(scope: Scope) -> dict[str, Any]:
    """The metadata document of ``/mcp`` as the client of ``scope`` reaches it."""
    return {
        "resource": f"{request_base_url(scope)}{_MCP_PATH}",
        "bearer_methods_supported": ["header"],
        "resource_name": "Roundtable",
    }


async def _metadata(request: Request) -> JSONResponse:
    return JSONResponse(resource_metadata(request.scope), headers={"Cache-Control": "no-store"})


RESOURCE_METADATA_ROUTES: list[BaseRoute] = [
    Route(PROTECTED_RESOURCE_METADATA_PATH, _metadata, methods=["GET"]),
    Route(f"{PROTECTED_RESOURCE_METADATA_PATH}{_MCP_PATH}", _metadata, methods=["GET"]),
]
"""``GET`` on the root well-known path and on its form for ``/mcp``; both answer the one document."""
