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

import contextlib
import os
import socket
import ssl
import stat
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, replace
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
from store.errors import Conflict, InternalError, InvalidArgument

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

MAX_UDS_PATH_BYTES = 107
"""``sun_path`` holds 108 bytes on Linux, one of them the terminating NUL."""

_LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")
_GRACE_SECONDS = 5.0

Lifespan = Callable[[Starlette], AbstractAsyncContextManager[None]]


def transport_security(extra_hosts: Sequence[str] = ()) -> TransportSecuritySettings:
    """DNS-rebinding protection that admits loopback names, with or without a port.

    ``localhost`` without a port is what a client on a Unix socket sends; ``extra_hosts`` adds
    the names a remote bind is reached by (``host`` or ``host:*``).
    """
    hosts = [*_LOOPBACK_NAMES, *(f"{name}:*" for name in _LOOPBACK_NAMES), *extra_hosts]
    origins = [f"{s}://{n}{p}" for s in ("http", "https") for n in _LOOPBACK_NAMES for p in ("", ":*")]
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
) -> Starlette:
    """The Starlette app: MCP at ``/mcp`` plus ``extra_routes``, behind bearer authentication.

    Build a new app for each server: the MCP session manager inside runs once per app.
    ``tool_names`` is the spelling ``tools/list`` shows (both are callable).
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
        middleware=[Middleware(BearerAuthMiddleware, authenticator=auth, guarded_prefixes=guarded_prefixes)],
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


@dataclass(frozen=True)
class BoundAddress:
    """Where a server listens: a TCP host and port, or a Unix socket path."""

    host: str | None = None
    port: int | None = None
    uds: str | None = None
    tls: bool = False

    @property
    def base_url(self) -> str:
        """The base URL a client uses: ``https://`` with TLS, ``http://localhost`` on a Unix socket."""
        if self.uds is not None:
            return "http://localhost"
        assert self.host is not None
        assert self.port is not None
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{'https' if self.tls else 'http'}://{host}:{self.port}"

    @property
    def mcp_url(self) -> str:
        """The MCP endpoint."""
        return f"{self.base_url}/mcp"


def _bind_tcp(host: str, port: int) -> tuple[socket.socket, BoundAddress]:
    if not 0 <= port <= 65535:
        raise InvalidArgument("port must lie between 0 and 65535")
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    except socket.gaierror as exc:
        raise InvalidArgument(f"cannot resolve {host!r}: {exc.strerror}") from None
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
        sock.setblocking(False)
    except OSError as exc:
        sock.close()
        raise Conflict(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    bound = sock.getsockname()
    return sock, BoundAddress(host=str(bound[0]), port=int(bound[1]))


def _bind_unix(path: str, mode: int) -> tuple[socket.socket, BoundAddress]:
    if len(os.fsencode(path)) > MAX_UDS_PATH_BYTES:
        raise InvalidArgument(f"socket path is longer than {MAX_UDS_PATH_BYTES} bytes: {path}")
    with contextlib.suppress(FileNotFoundError):
        info = os.lstat(path)
        if not stat.S_ISSOCK(info.st_mode):
            raise Conflict(f"{path} exists and is not a socket; refusing to replace it")
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            probe.connect(path)
        except OSError:
            os.unlink(path)  # a stale socket left by a dead server
        else:
            raise Conflict(f"another server is listening on {path}")
        finally:
            probe.close()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(path)
        # Before listen(): until then nobody can connect, whatever the umask gave the file.
        os.chmod(path, mode)
        sock.listen(128)
        sock.setblocking(False)
    except OSError as exc:
        sock.close()
        raise Conflict(f"cannot listen on {path}: {exc.strerror}") from None
    return sock, BoundAddress(uds=path)


@dataclass
class _Listener:
    """A bound, listening socket; closing it removes its Unix socket path if still its own."""

    sock: socket.socket
    address: BoundAddress
    ident: tuple[int, int] | None = None
    tls: ssl.SSLContext | None = None

    def close(self) -> None:
        self.sock.close()
        path = self.address.uds
        if path is not None and self.ident is not None and _ident(path) == self.ident:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)


def _ident(path: str) -> tuple[int, int] | None:
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    return info.st_dev, info.st_ino


def _listen(
    host: str | None, port: int, uds: str | Path | None, uds_mode: int, tls: ssl.SSLContext | None = None
) -> _Listener:
    if (host is None) == (uds is None):
        raise InvalidArgument("serve on either a TCP host or a Unix socket path")
    if uds is not None and tls is not None:
        raise InvalidArgument("TLS is served on TCP only; a Unix socket never leaves this machine")
    if uds is not None:
        sock, address = _bind_unix(str(uds), uds_mode)
        return _Listener(sock, address, _ident(str(uds)))
    assert host is not None
    sock, address = _bind_tcp(host, port)
    return _Listener(sock, replace(address, tls=tls is not None), tls=tls)


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
        app, _listen(host, port, uds, uds_mode, tls), on_shutdown=on_shutdown, task_status=task_status
    )


def _given_context(context: ssl.SSLContext, _config: uvicorn.Config, _default: Any) -> ssl.SSLContext:
    return context  # uvicorn serves TLS with the context loaded (and checked) before the bind


async def _serve_listener(
    app: Any,
    listener: _Listener,
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
    listener = _listen(host, port, uds, uds_mode, tls)
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
