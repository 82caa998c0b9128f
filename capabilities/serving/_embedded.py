"""uvicorn embedded in a Roundtable process: ready when it accepts, stopped as soon as it is told.

uvicorn's own loop notices ``should_exit`` on a 0.1 s tick, then sleeps another 0.1 s after asking
its connections to close and polls for them every 0.1 s: a stop costs 0.2 to 0.4 s of sleeping,
paid by every launch when its socket stops. :class:`EmbeddedServer` waits on the things instead:
setting ``should_exit`` wakes the main loop at once, and the shutdown waits for the last connection
and the last request task to go (uvicorn's sets of them tell it when they empty). What the grace
period does not end is cancelled and its transport aborted, and the shutdown waits for those to be
lost too, so no connection outlives the server (no unclosed transport is left to the collector).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Iterable, Iterator
from typing import Any, TypeVar

import anyio
import uvicorn

__all__ = ["EmbeddedServer"]

_T = TypeVar("_T")
_TICK_SECONDS = 1.0  # uvicorn refreshes its Date header once a second; nothing else needs a tick
_ABORT_SECONDS = 1.0


class _Watched(set[_T]):
    """A set that says when it is empty: uvicorn's connections and request tasks, to wait on."""

    def __init__(self, items: Iterable[_T] = ()):
        super().__init__(items)
        self._empty = asyncio.Event()
        if not self:
            self._empty.set()

    def add(self, item: _T) -> None:
        """Add ``item``; the set is no longer empty."""
        super().add(item)
        self._empty.clear()

    def discard(self, item: object) -> None:
        """Remove ``item`` if present; waiters wake when that empties the set."""
        super().discard(item)
        if not self:
            self._empty.set()

    def remove(self, item: _T) -> None:
        """Remove ``item``; waiters wake when that empties the set."""
        super().remove(item)
        if not self:
            self._empty.set()

    async def emptied(self) -> None:
        """Return once the set is empty."""
        while self:
            await self._empty.wait()


class EmbeddedServer(uvicorn.Server):
    """uvicorn that reports readiness, leaves signal handling to its caller and stops promptly.

    Set :attr:`should_exit` (as uvicorn's own code does) to stop it: the main loop wakes at once.
    """

    def __init__(self, config: uvicorn.Config):
        self._exit = asyncio.Event()
        super().__init__(config)
        self.ready = anyio.Event()
        self._connections: _Watched[Any] = _Watched(self.server_state.connections)
        self._tasks: _Watched[asyncio.Task[None]] = _Watched(self.server_state.tasks)
        self.server_state.connections = self._connections
        self.server_state.tasks = self._tasks

    @property
    def should_exit(self) -> bool:
        """Whether the server has been told to stop; setting it wakes the main loop."""
        return self._exit.is_set()

    @should_exit.setter
    def should_exit(self, value: bool) -> None:
        if value:
            self._exit.set()
        else:
            self._exit.clear()

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        """Start, then signal that the socket accepts requests (or that startup ended)."""
        try:
            await super().startup(sockets)
        finally:
            self.ready.set()

    async def main_loop(self) -> None:
        """Serve until :attr:`should_exit`, woken by it rather than finding it on a tick."""
        while not await self.on_tick(0):  # a multiple of 10: the Date header is refreshed
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._exit.wait(), _TICK_SECONDS)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        """Stop accepting, let open requests finish within the grace period, then end the lifespan.

        Idle keep-alive connections close at once; a connection with a response under way closes
        when it is sent. Past the grace period the remaining request tasks are cancelled and
        their connections aborted.
        """
        for server in self.servers:
            server.close()
        for sock in sockets or []:
            sock.close()
        for connection in list(self._connections):
            connection.shutdown()
        try:
            await asyncio.wait_for(self._drain(), timeout=self.config.timeout_graceful_shutdown)
        except TimeoutError:
            for task in list(self._tasks):
                task.cancel(msg="Task cancelled, timeout graceful shutdown exceeded")
            for connection in list(self._connections):
                transport = getattr(connection, "transport", None)
                if transport is not None:
                    transport.abort()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._connections.emptied(), _ABORT_SECONDS)
        if not self.force_exit:
            await self.lifespan.shutdown()

    async def _drain(self) -> None:
        await self._connections.emptied()
        await self._tasks.emptied()
        for server in self.servers:
            await server.wait_closed()

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        """Install nothing: several servers may run in one process, which owns the signals."""
        yield
