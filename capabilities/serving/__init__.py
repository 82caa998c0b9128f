"""How Roundtable is served: stdio, streamable HTTP on TCP (TLS past loopback) or a Unix socket, and
the web service (MCP at ``/mcp``, the HTTP API at ``/api/v1``, the console at ``/``).

A launch's socket is served by the lean server (:class:`LaunchSocketApp`, :func:`serve_launch_socket`:
h11 over anyio, no MCP SDK, Starlette or uvicorn on its path). The uvicorn-served apps and the web
service's names are imported on first use (PEP 562), so a supervisor that launches need not import
them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from capabilities.serving._launch_app import LaunchSocketApp, serve_launch_socket
from capabilities.serving._lean_http import HttpLimits
from capabilities.serving._listen import BoundAddress
from capabilities.serving._remote import ServerTLS, assume_https, check_bind_host, load_server_tls

if TYPE_CHECKING:
    from capabilities.serving._transports import build_launch_app, serve_asgi, serving
    from capabilities.serving._web import API_PREFIX, WebService, build_service_app, prepare_shutdown

__all__ = [
    "API_PREFIX",
    "BoundAddress",
    "HttpLimits",
    "LaunchSocketApp",
    "ServerTLS",
    "WebService",
    "assume_https",
    "build_launch_app",
    "build_service_app",
    "check_bind_host",
    "load_server_tls",
    "prepare_shutdown",
    "serve_asgi",
    "serve_launch_socket",
    "serving",
]

_LAZY = {
    "API_PREFIX": "capabilities.serving._web",
    "WebService": "capabilities.serving._web",
    "build_service_app": "capabilities.serving._web",
    "prepare_shutdown": "capabilities.serving._web",
    "build_launch_app": "capabilities.serving._transports",
    "serve_asgi": "capabilities.serving._transports",
    "serving": "capabilities.serving._transports",
}


def __getattr__(name: str) -> Any:
    """The uvicorn-served apps and the web service's names, imported when first asked for."""
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
