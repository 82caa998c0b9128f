"""How Roundtable is served: stdio, streamable HTTP on TCP or a Unix socket, and the web service
(MCP at ``/mcp``, the HTTP API at ``/api/v1``, the console at ``/``).
"""

from __future__ import annotations

from capabilities.serving._transports import (
    BoundAddress,
    build_launch_app,
    check_bind_host,
    serve_asgi,
    serving,
)
from capabilities.serving._web import API_PREFIX, WebService, build_service_app, prepare_shutdown

__all__ = [
    "API_PREFIX",
    "BoundAddress",
    "WebService",
    "build_launch_app",
    "build_service_app",
    "check_bind_host",
    "prepare_shutdown",
    "serve_asgi",
    "serving",
]
