"""The web service beside MCP: the ``/api/v1`` API, the console at ``/``, and their background work.

:class:`WebService` owns the two long-lived tasks (the event poller of the live stream and the
resynthesis worker) and starts them from :meth:`WebService.lifespan`, which the Starlette app
enters once; :func:`build_service_app` assembles the whole application (MCP at ``/mcp`` from
:func:`capabilities.serving._transports.build_asgi_app`, its protected-resource metadata from
:mod:`capabilities.serving._resource_metadata`, then the API mount, then the console).

Resynthesis: with the ``lexical`` provider configured (the default), the worker fulfils each
request as soon as it is recorded, deterministically. Any other provider is reached through the
supervisor, which passes its synthesizer in (``synthesizer=``); without one, requests stay
``requested`` until a process that has one fulfils them.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import anyio
import structlog
from anyio.abc import TaskStatus
from starlette.applications import Starlette
from starlette.routing import BaseRoute, Match, Mount
from starlette.types import Scope

from capabilities.console import CONSOLE_ROUTES
from capabilities.http_api import EXCEPTION_HANDLERS, ApiState, EventBroadcaster, api_routes
from capabilities.mcp import ToolNaming
from capabilities.services import Services
from capabilities.serving._resource_metadata import RESOURCE_METADATA_ROUTES
from capabilities.serving._transports import build_asgi_app
from store.config import EMBEDDED_PROVIDERS, ProviderName
from store.errors import RoundtableError
from store.memory import Synthesizer, lexical_resynthesis

__all__ = ["API_PREFIX", "WebService", "build_service_app", "prepare_shutdown"]

API_PREFIX = "/api/v1"
_log = structlog.get_logger("roundtable.web")


class _PrefixMount(Mount):
    """A mount that owns every path under its prefix, whatever characters follow.

    Starlette's ``Mount`` matches with ``.*``, which stops at a newline, so ``/api/v1/x%0A`` would
    fall through to the console and answer plain text; here the API's JSON errors answer it.
    """

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        """Starlette's match, extended to every path that starts with the prefix."""
        match, child = super().matches(scope)
        path = str(scope.get("path", ""))
        if match is Match.NONE and scope["type"] == "http" and path.startswith(self.path + "/"):
            root_path = scope.get("root_path", "")
            child = {
                "path_params": dict(scope.get("path_params", {})),
                "app_root_path": scope.get("app_root_path", root_path),
                "root_path": root_path + self.path,
                "endpoint": self.app,
            }
            match = Match.FULL
        return match, child


class WebService:
    """The API and console routes of one server, and the background tasks they rely on."""

    def __init__(
        self,
        services: Services,
        *,
        synthesizer: Synthesizer | None = None,
        provider: str | None = None,
        poll_interval: float = 0.25,
        queue_size: int = 256,
        write_timeout: float = 10.0,
        heartbeat: float = 15.0,
        resynthesis_poll: float = 5.0,
        console: bool = True,
    ):
        self.services = services
        store = services.store
        configured = store.config.roles.memory_oracle.provider
        if synthesizer is None and configured in EMBEDDED_PROVIDERS:
            # An embedded provider has no model to write with: resynthesis is the lexical one.
            synthesizer, provider = lexical_resynthesis, ProviderName.LEXICAL
        self.synthesizer = synthesizer
        self.provider = provider or configured
        self.resynthesis_poll = resynthesis_poll
        self.broadcaster = EventBroadcaster(store, poll_interval=poll_interval, queue_size=queue_size)
        self.write_timeout = write_timeout
        self.heartbeat = heartbeat
        self.console = console
        self._resynthesis_wake = anyio.Event()
        self.state = ApiState(services, self.broadcaster, self.changed)

    def close_streams(self) -> None:
        """End the live streams so a server shutdown need not wait for them (see :func:`prepare_shutdown`)."""
        self.broadcaster.close()

    def changed(self) -> None:
        """Something was committed by this process: stream it and look for work now."""
        self.broadcaster.poke()
        self._resynthesis_wake.set()

    def api_routes(self) -> list[BaseRoute]:
        """The routes of ``/api/v1`` (relative paths), with this service's stream timings."""
        return api_routes(write_timeout=self.write_timeout, heartbeat=self.heartbeat)

    def routes(self) -> list[BaseRoute]:
        """Everything this service serves beside ``/mcp``: the API mount, then the console.

        The API is a sub-application, its own ``request.app``: it gets this service's
        :class:`~capabilities.http_api.ApiState` here; the app that mounts these routes (and
        serves the console) needs it too (:func:`build_service_app` sets it).
        """
        api = Starlette(routes=self.api_routes(), exception_handlers=EXCEPTION_HANDLERS)
        api.state.api = self.state
        routes: list[BaseRoute] = [_PrefixMount(API_PREFIX, app=api)]
        if self.console:
            routes += CONSOLE_ROUTES
        return routes

    @asynccontextmanager
    async def lifespan(self, app: Any) -> AsyncIterator[None]:
        """Run the event poller and the resynthesis worker for as long as the app is up."""
        async with anyio.create_task_group() as tg:
            await tg.start(self.broadcaster.run)
            if self.synthesizer is not None:
                await tg.start(self._resynthesis_worker)
            try:
                yield
            finally:
                tg.cancel_scope.cancel()

    async def _resynthesis_worker(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Fulfil open resynthesis requests as they arrive (and any left from before a restart)."""
        assert self.synthesizer is not None
        admin = self.services.store.memory_admin
        run = self.services.store.db.run
        task_status.started()
        while True:
            for request_id in await run(admin.pending_resynthesis):
                try:
                    await run(admin.fulfil_resynthesis, request_id, self.synthesizer, provider=self.provider)
                except RoundtableError as exc:  # fulfilled elsewhere meanwhile, or gone
                    _log.info("resynthesis.skipped", request_id=request_id, reason=exc.message)
                self.broadcaster.poke()
            with anyio.move_on_after(self.resynthesis_poll if self.resynthesis_poll > 0 else math.inf):
                await self._resynthesis_wake.wait()
            self._resynthesis_wake = anyio.Event()


def build_service_app(
    services: Services,
    *,
    web: WebService | None = None,
    extra_routes: Sequence[BaseRoute] = (),
    allowed_hosts: Sequence[str] = (),
    tool_names: ToolNaming = ToolNaming.DOTTED,
) -> Starlette:
    """The whole ``roundtable serve`` application: ``/mcp`` with its protected-resource metadata
    (unauthenticated, under ``/.well-known``), ``/api/v1`` and the console. ``tool_names`` is the
    spelling ``tools/list`` shows (both are callable)."""
    service = web or WebService(services)
    app = build_asgi_app(
        services,
        extra_routes=[*RESOURCE_METADATA_ROUTES, *extra_routes, *service.routes()],
        extra_lifespans=[service.lifespan],
        allowed_hosts=allowed_hosts,
        tool_names=tool_names,
    )
    app.state.web_service = service
    app.state.api = service.state
    return app


def prepare_shutdown(app: Any) -> None:
    """Call before stopping the server: ends open event streams (they would hold up a graceful stop)."""
    service = getattr(getattr(app, "state", None), "web_service", None)
    if isinstance(service, WebService):
        service.close_streams()
