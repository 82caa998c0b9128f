"""How Roundtable is served: stdio, streamable HTTP on TCP (TLS past loopback) or a Unix socket, and
the web service (MCP at ``/mcp``, the HTTP API at ``/api/v1``, the console at ``/``).

The web service's names are imported on first use (PEP 562): a launch serves its socket with
:func:`build_launch_app` and :func:`serving` alone, and need not import the HTTP API and the console.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from capabilities.serving._remote import ServerTLS, assume_https, check_bind_host, load_server_tls
from capabilities.serving._transports import BoundAddress, build_launch_app, serve_asgi, serving

if TYPE_CHECKING:
    from capabilities.serving._web import API_PREFIX, WebService, build_service_app, prepare_shutdown

__all__ = [
    "API_PREFIX",
    "BoundAddress",
    "ServerTLS",
    "WebService",
    "assume_https",
    "build_launch_app",
    "build_service_app",
    "check_bind_host",
    "load_server_tls",
    "prepare_shutdown",
    "serve_asgi",
    "serving",
]

_WEB_NAMES = frozenset({"API_PREFIX", "WebService", "build_service_app", "prepare_shutdown"})


def __getattr__(name: str) -> Any:
    """The web service's names, imported when first asked for."""
    if name in _WEB_NAMES:
        from capabilities.serving import _web

        return getattr(_web, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
