"""What a launch's socket serves, on the lean HTTP server: authentication, MCP, the model gateway.

:class:`LaunchSocketApp` is the lean counterpart of
:func:`~capabilities.serving._transports.build_launch_app`, with the same behaviour for every
client: every path guarded, only the launch's own grant accepted (:class:`~capabilities.auth.Authenticator`
with ``only_grant_id``, through :func:`~capabilities.auth.authenticate_request`, the 401 of
:func:`~capabilities.auth.refusal`), then

- ``/mcp`` at a modern protocol revision: :class:`~capabilities.serving._lean_mcp.LeanMcp`;
- ``/mcp`` otherwise (an earlier revision's session handshake), or a request ``LeanMcp`` defers: the
  SDK's MCP app, built on first use (:class:`~capabilities.serving._asgi_bridge.AsgiBridge`);
- any other path: the ``extra_routes`` (the model gateway), in a Starlette app built on first use,
  or a 404.

Neither the MCP SDK nor Starlette nor uvicorn is imported unless a request needs one of the apps.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio.abc

from capabilities.auth import Authenticator, authenticate_request, refusal
from capabilities.mcp import PRINCIPAL_SCOPE_KEY, ToolRegistry
from capabilities.services import Services
from capabilities.serving._asgi_bridge import AsgiBridge
from capabilities.serving._lean_http import HttpLimits, HttpRequest, Reply, lean_serving
from capabilities.serving._lean_mcp import DEFER, LeanMcp, is_modern
from capabilities.serving._listen import BoundAddress
from store.errors import Unauthenticated

__all__ = ["LaunchSocketApp", "serve_launch_socket"]


@dataclass
class LaunchSocketApp:
    """One launch's socket application: ``grant_id`` alone accepted; ``extra_routes`` are Starlette
    routes (the launch's model gateway) behind the same guard."""

    services: Services
    grant_id: str
    registry: ToolRegistry | None = None
    extra_routes: Sequence[Any] = ()
    _mcp: LeanMcp = field(init=False, repr=False)
    _authenticator: Authenticator = field(init=False, repr=False)
    _sdk: AsgiBridge = field(init=False, repr=False)
    _routes: AsgiBridge = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if self.registry is None:
            from capabilities.mcp.tools import build_registry

            self.registry = build_registry()
        self._mcp = LeanMcp(self.services, self.registry)
        self._authenticator = Authenticator(self.services.store, only_grant_id=self.grant_id)
        self._sdk = AsgiBridge(self._build_sdk_app)
        self._routes = AsgiBridge(self._build_routes_app)

    def _build_sdk_app(self) -> Any:
        from capabilities.serving._transports import build_asgi_app

        return build_asgi_app(self.services, registry=self.registry, guarded=False)

    def _build_routes_app(self) -> Any:
        from starlette.applications import Starlette

        return Starlette(routes=list(self.extra_routes))

    def attach(self, tg: anyio.abc.TaskGroup) -> None:
        """Where the apps built on demand run their lifespans: the server's task group."""
        self._sdk.attach(tg)
        self._routes.attach(tg)

    async def aclose(self) -> None:
        """End the lifespans of the apps built on demand."""
        await self._sdk.aclose()
        await self._routes.aclose()

    async def __call__(self, request: HttpRequest, reply: Reply) -> None:
        """Authenticate ``request``, then answer it (see the module's docstring)."""
        scope = {
            "type": "http",
            "scheme": "http",
            "server": None,
            "path": request.path,
            "headers": request.headers,
            "query_string": request.query_string,
        }
        try:
            principal = await authenticate_request(self._authenticator, scope)
        except Unauthenticated as exc:
            headers, body = refusal(scope, exc)
            await reply.start(401, headers)
            await reply.write(body)
            await reply.end()
            return
        # What the bearer middleware passes on: the principal, and no token to log or echo.
        passed = HttpRequest(
            request.method,
            request.path,
            request.raw_path,
            request.query_string,
            [(name, value) for name, value in request.headers if name != b"authorization"],
            request.body,
            request.http_version,
        )
        extra = {PRINCIPAL_SCOPE_KEY: principal}
        if request.path == "/mcp":
            if is_modern(passed) and await self._mcp.handle(passed, reply, principal) is not DEFER:
                return
            await self._sdk(passed, reply, extra)
        elif self.extra_routes:
            await self._routes(passed, reply, extra)
        else:
            await reply.send(404, [(b"content-type", b"text/plain; charset=utf-8")], b"Not Found")


@asynccontextmanager
async def serve_launch_socket(
    app: LaunchSocketApp, path: str | Path, *, uds_mode: int = 0o600, limits: HttpLimits | None = None
) -> AsyncIterator[BoundAddress]:
    """Serve ``app`` on the Unix socket ``path`` for the ``async with`` block (stopped promptly after)."""
    async with lean_serving(
        app, uds=path, uds_mode=uds_mode, limits=limits, on_start=app.attach, on_stop=app.aclose
    ) as address:
        yield address
