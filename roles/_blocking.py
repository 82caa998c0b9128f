"""The runner's requests without an event loop: blocking socket I/O under the same async code.

A judge or lexical launch makes a handful of requests, one after another, on one Unix socket. anyio
and asyncio cost about 90 ms of imports in the container (its socket layer and its asyncio
backend: a tenth of a second on every launch's critical path) for a loop that never has two things
to do. So the runner drives those providers' coroutines with :func:`run_blocking`: their only
awaits are the tool calls, which end in :class:`BlockingUnixHttpClient`, whose I/O blocks instead of
suspending; a coroutine that never suspends finishes on its first ``send``. The HTTP framing is
:class:`roles._unix_http.UnixHttpClient`'s own (the same reader, retries and limits); only the
stream, the clock and the deadline differ. The ``openai`` provider (an async HTTP client for the
model gateway) and a TLS channel keep the event loop.
"""

from __future__ import annotations

import contextlib
import socket
import time
from collections.abc import Coroutine, Iterator
from typing import Any, TypeVar

import anyio

from roles._unix_http import HttpError, UnixHttpClient

__all__ = ["BlockingUnixHttpClient", "run_blocking"]

_T = TypeVar("_T")


def run_blocking(coroutine: Coroutine[Any, Any, _T]) -> _T:
    """Run ``coroutine`` to its end on this thread; it must never suspend (RuntimeError if it does)."""
    try:
        coroutine.send(None)
    except StopIteration as done:
        result: _T = done.value
        return result
    coroutine.close()
    raise RuntimeError("a blocking run's coroutine suspended: it awaited something that needs an event loop")


class _SocketStream:
    """What the HTTP reader uses of an anyio byte stream, over a blocking socket."""

    def __init__(self, sock: socket.socket):
        self.sock = sock

    async def receive(self, max_bytes: int = 65536) -> bytes:
        try:
            data = self.sock.recv(max_bytes)
        except TimeoutError:
            raise
        except OSError as exc:
            raise anyio.BrokenResourceError from exc
        if not data:
            raise anyio.EndOfStream
        return data

    async def send(self, item: bytes) -> None:
        try:
            self.sock.sendall(item)
        except TimeoutError:
            raise
        except OSError as exc:
            raise anyio.BrokenResourceError from exc

    async def aclose(self) -> None:
        self.sock.close()


class BlockingUnixHttpClient(UnixHttpClient):
    """:class:`~roles._unix_http.UnixHttpClient` with blocking I/O: each socket operation waits at
    most :attr:`timeout` seconds (TimeoutError past it), and nothing needs an event loop."""

    async def _connect(self) -> Any:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        try:
            sock.connect(str(self.socket))
        except OSError as exc:
            sock.close()
            raise HttpError(f"cannot connect to {self.socket}: {exc.strerror or exc}") from None
        return _SocketStream(sock)

    def _bounded(self) -> contextlib.AbstractContextManager[object]:
        return _unbounded()

    def _now(self) -> float:
        return time.monotonic()


@contextlib.contextmanager
def _unbounded() -> Iterator[None]:
    yield  # the socket's own timeout bounds each operation
