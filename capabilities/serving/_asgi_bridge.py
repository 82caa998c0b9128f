"""An ASGI application behind the lean HTTP server, built and started only when a request needs it.

The lean launch socket server answers MCP itself; what it does not answer goes to an ASGI app: the
launch's model gateway route (a Starlette route) and the SDK's own MCP app for the requests the lean
server leaves to it (an earlier protocol revision's session handshake, a method it does not serve).
:class:`AsgiBridge` builds that app on first use, in a worker thread (building it imports Starlette,
and for the SDK app the MCP SDK: a blocking import must not stall the event loop), runs its lifespan
in the server's task group until the server stops, and passes each request through: the request's
body as one ``http.request`` message, the response written as the app sends it (streamed when the
app streams, chunked when it gives no length).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import anyio
import anyio.abc
import structlog

from capabilities.serving._lean_http import HttpRequest, Reply
from store.errors import InternalError

__all__ = ["AsgiBridge"]

_log = structlog.get_logger("roundtable.serving")
_ASGI = {"version": "3.0", "spec_version": "2.3"}
_LIFESPAN_SECONDS = 5.0


class AsgiBridge:
    """Serves requests with the ASGI app ``build()`` returns, built on the first request."""

    def __init__(self, build: Callable[[], Any]):
        self._build = build
        self._app: Any = None
        self._lock = anyio.Lock()
        self._tg: anyio.abc.TaskGroup | None = None
        self._state: dict[str, Any] = {}
        self._shutdown = anyio.Event()
        self._done: anyio.Event | None = None
        self._lifespan_scope = anyio.CancelScope(shield=True)

    def attach(self, tg: anyio.abc.TaskGroup) -> None:
        """Where the app's lifespan runs: the server's task group."""
        self._tg = tg

    async def _ready(self) -> Any:
        async with self._lock:
            if self._app is None:
                assert self._tg is not None, "attach() the bridge to the server first"
                app = await anyio.to_thread.run_sync(self._build)
                started, failed = anyio.Event(), list[str]()
                self._done = anyio.Event()
                self._tg.start_soon(self._lifespan, app, started, failed)
                await started.wait()
                if failed:
                    raise InternalError(f"the ASGI app failed to start: {failed[0]}")
                self._app = app
        return self._app

    async def _lifespan(self, app: Any, started: anyio.Event, failed: list[str]) -> None:
        assert self._done is not None
        asked = False

        async def receive() -> dict[str, Any]:
            nonlocal asked
            if not asked:
                asked = True
                return {"type": "lifespan.startup"}
            await self._shutdown.wait()
            return {"type": "lifespan.shutdown"}

        async def send(message: Mapping[str, Any]) -> None:
            if message["type"] == "lifespan.startup.failed":
                failed.append(str(message.get("message", "")))
            if message["type"].startswith("lifespan.startup."):
                started.set()

        try:
            with self._lifespan_scope:
                await app({"type": "lifespan", "asgi": _ASGI, "state": self._state}, receive, send)
        except Exception as exc:
            _log.exception("asgi.lifespan_failed")
            failed.append(f"{type(exc).__name__}: {exc}")
        finally:
            started.set()
            self._done.set()

    async def aclose(self) -> None:
        """End the app's lifespan (if it was started), within a bound."""
        self._shutdown.set()
        if self._done is not None:
            with anyio.move_on_after(_LIFESPAN_SECONDS, shield=True):
                await self._done.wait()
        self._lifespan_scope.cancel()

    async def __call__(self, request: HttpRequest, reply: Reply, extra: Mapping[str, Any]) -> None:
        """Serve ``request`` with the app; ``extra`` joins the scope (the authenticated principal)."""
        app = await self._ready()
        scope: dict[str, Any] = {
            "type": "http",
            "asgi": _ASGI,
            "http_version": request.http_version,
            "method": request.method,
            "scheme": "http",
            "path": request.path,
            "raw_path": request.raw_path,
            "query_string": request.query_string,
            "root_path": "",
            "headers": request.headers,
            "client": None,
            "server": None,
            "state": dict(self._state),
            **extra,
        }
        sent_body = False

        async def receive() -> dict[str, Any]:
            nonlocal sent_body
            if not sent_body:
                sent_body = True
                return {"type": "http.request", "body": request.body, "more_body": False}
            await reply.gone.wait()
            return {"type": "http.disconnect"}

        async def send(message: Mapping[str, Any]) -> None:
            if message["type"] == "http.response.start":
                headers = [(bytes(name).lower(), bytes(value)) for name, value in message.get("headers", [])]
                await reply.start(int(message["status"]), headers)
            elif message["type"] == "http.response.body":
                await reply.write(bytes(message.get("body", b"")))
                if not message.get("more_body", False):
                    await reply.end()

        await app(scope, receive, send)
