"""The MCP transports: stdio, and streamable HTTP on TCP or on a Unix socket.

:func:`build_asgi_app` assembles one Starlette application: the MCP endpoint at ``/mcp`` (the SDK's
streamable HTTP handler over :class:`RoundtableMCPServer`), any extra routes (the HTTP API and the
web console mount here later), and the bearer-token middleware in front. The app's lifespan runs
the MCP session manager and any extra lifespans, so mounting more routes never means a second
server. :func:`build_launch_app` is the per-launch variant: every path guarded, one grant accepted.

:func:`serve_asgi` serves an app with uvicorn on a socket it binds itself (TCP, port 0 allowed, or
a Unix socket path with its mode set before ``listen``; TCP optionally over TLS, uvicorn's own, with a
context :mod:`capabilities.serving._remote` loaded before the bind), reports the bound address through
``task_status.started()`` once the lifespan has started and the socket accepts, and serves until
cancelled, then shuts down gracefully within a bound. :func:`serving` wraps it as an async
context manager. Host/Origin checks (DNS-rebinding protection) accept ``localhost`` without a
port, which is what HTTP clients on a Unix socket send.
"""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import uvicorn
from anyio.abc import TaskStatus
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.routing import BaseRoute

from capabilities.auth import Authenticator, BearerAuthMiddleware
from capabilities.mcp import RoundtableMCPServer, ToolNaming, ToolRegistry
from capabilities.mcp.tools import build_registry
from capabilities.principals import Principal, local_operator
from capabilities.services import Services
from capabilities.serving._embedded import EmbeddedServer
from capabilities.serving._listen import (
    MAX_UDS_PATH_BYTES,
    BoundAddress,
    Listener,
    allowed_hosts_and_origins,
    listen,
)
from store.errors import InternalError

__all__ = [
    "MAX_UDS_PATH_BYTES",
    "BoundAddress",
    "build_asgi_app",
    "build_launch_app",
    "serve_asgi",
    "serve_stdio",
    "serving",
    "transport_security",
]

_GRACE_SECONDS = 5.0

Lifespan = Callable[[Starlette], AbstractAsyncContextManager[None]]


def transport_security(extra_hosts: Sequence[str] = ()) -> TransportSecuritySettings:
    """DNS-rebinding protection that admits loopback names, with or without a port.

    ``localhost`` without a port is what a client on a Unix socket sends; ``extra_hosts`` adds
    the names a remote bind is reached by (``host`` or ``host:*``).
    """
    hosts, origins = allowed_hosts_and_origins(extra_hosts)
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins
    )


def build_asgi_app(
    services: Services,
    *,
    registry: ToolRegistry | None = None,
    authenticator: Authenticator | None = None,
    extra_routes: Sequence[BaseRoute] = (),
    extra_lifespans: Sequence[Lifespan] = (),
    guarded_prefixes: Sequence[str] = ("/mcp", "/api"),
    allowed_hosts: Sequence[str] = (),
    json_response: bool = True,
    tool_names: ToolNaming = ToolNaming.DOTTED,
    guarded: bool = True,
) -> Starlette:
    """The Starlette app: MCP at ``/mcp`` plus ``extra_routes``, behind bearer authentication.

    Build a new app for each server: the MCP session manager inside runs once per app.
    ``tool_names`` is the spelling ``tools/list`` shows (both are callable). ``guarded=False``
    leaves the bearer middleware out, for a server that authenticated the request itself and put
    the principal in the scope (the lean launch socket server, passing a request on).
    """
    server = RoundtableMCPServer(services, registry or build_registry(), tool_names=tool_names)
    mcp_app = server.streamable_http_app(
        streamable_http_path="/mcp",
        json_response=json_response,
        transport_security=transport_security(allowed_hosts),
    )
    session_manager = server.session_manager

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            await stack.enter_async_context(session_manager.run())
            for extra in extra_lifespans:
                await stack.enter_async_context(extra(app))
            yield

    auth = authenticator or Authenticator(services.store)
    app = Starlette(
        routes=[*mcp_app.routes, *extra_routes],
        middleware=[Middleware(BearerAuthMiddleware, authenticator=auth, guarded_prefixes=guarded_prefixes)]
        if guarded
        else [],
        lifespan=lifespan,
    )
    app.state.mcp_server = server
    return app


def build_launch_app(
    services: Services,
    grant_id: str,
    *,
    registry: ToolRegistry | None = None,
    extra_routes: Sequence[BaseRoute] = (),
) -> Starlette:
    """The app behind one launch's socket: every path guarded, only ``grant_id`` accepted.

    ``extra_routes`` (for example the launch's model gateway) sit behind the same guard.
    """
    return build_asgi_app(
        services,
        registry=registry,
        authenticator=Authenticator(services.store, only_grant_id=grant_id),
        extra_routes=extra_routes,
        guarded_prefixes=("",),
    )


async def serve_stdio(
    services: Services, *, principal: Principal | None = None, registry: ToolRegistry | None = None
) -> None:
    """Serve MCP on stdin/stdout for ``principal`` (default: the local operator)."""
    server = RoundtableMCPServer(
        services, registry or build_registry(), default_principal=principal or local_operator()
    )
    await server.run_stdio_async()


# -- serving ---------------------------------------------------------------------------------------


async def serve_asgi(
    app: Any,
    *,
    host: str | None = None,
    port: int = 0,
    uds: str | Path | None = None,
    uds_mode: int = 0o600,
    tls: ssl.SSLContext | None = None,
    on_shutdown: Callable[[], None] | None = None,
    task_status: TaskStatus[BoundAddress] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Serve ``app`` on TCP ``host:port`` (over TLS with ``tls``) or on Unix socket ``uds`` until cancelled.

    ``task_status.started(address)`` fires once requests are accepted. On cancellation
    ``on_shutdown`` runs first (an app ends its long-lived streams there, which would otherwise
    hold up the stop), then uvicorn gets a bounded graceful shutdown; a Unix socket path is
    removed on the way out.
    """
    await _serve_listener(
        app, listen(host, port, uds, uds_mode, tls), on_shutdown=on_shutdown, task_status=task_status
    )


def _given_context(context: ssl.SSLContext, _config: uvicorn.Config, _default: Any) -> ssl.SSLContext:
    return context  # uvicorn serves TLS with the context loaded (and checked) before the bind


async def _serve_listener(
    app: Any,
    listener: Listener,
    *,
    on_shutdown: Callable[[], None] | None = None,
    task_status: TaskStatus[BoundAddress] = anyio.TASK_STATUS_IGNORED,
) -> None:
    config = uvicorn.Config(
        app,
        lifespan="on",
        log_config=None,  # keep Roundtable's logging set-up
        log_level="warning",
        access_log=False,  # an access log would record query strings, where a careless client puts tokens
        server_header=False,
        proxy_headers=False,
        timeout_graceful_shutdown=int(_GRACE_SECONDS),
        ssl_context_factory=None if listener.tls is None else partial(_given_context, listener.tls),
    )
    server = EmbeddedServer(config)
    done = anyio.Event()
    serve_scope = anyio.CancelScope(shield=True)
    failed: list[BaseException] = []

    async def run() -> None:
        # Shielded: a cancelled caller asks for a graceful shutdown instead of tearing uvicorn apart.
        with serve_scope:
            try:
                await server.serve(sockets=[listener.sock])
            except SystemExit as exc:  # uvicorn's way of saying the lifespan failed to start
                failed.append(exc)
            finally:
                server.ready.set()
                done.set()

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            try:
                await server.ready.wait()
                if not server.started:
                    detail = f" (exit status {failed[0]})" if failed else ""
                    raise InternalError(f"the HTTP server failed to start{detail}; see the log")
                task_status.started(listener.address)
                await done.wait()
            finally:
                if on_shutdown is not None:
                    on_shutdown()
                server.should_exit = True
                with anyio.move_on_after(_GRACE_SECONDS * 2, shield=True):
                    await done.wait()
                serve_scope.cancel()
    finally:
        listener.close()


@asynccontextmanager
async def serving(
    app: Any,
    *,
    host: str | None = None,
    port: int = 0,
    uds: str | Path | None = None,
    uds_mode: int = 0o600,
    tls: ssl.SSLContext | None = None,
    on_shutdown: Callable[[], None] | None = None,
) -> AsyncIterator[BoundAddress]:
    """Serve ``app`` for the duration of the ``async with`` block; yields the bound address."""
    # Bind here, outside the task group, so a bind error reaches the caller as itself.
    listener = listen(host, port, uds, uds_mode, tls)
    async with anyio.create_task_group() as tg:
        try:
            address = await tg.start(partial(_serve_listener, app, listener, on_shutdown=on_shutdown))
        except BaseException:
            listener.close()
            raise
        try:
            yield address
        finally:
            tg.cancel_scope.cancel()
