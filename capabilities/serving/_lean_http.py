"""A small HTTP/1.1 server on a Unix socket: h11 framing over anyio streams, for the launch socket.

The launch socket answers a handful of JSON requests, yet serving it with uvicorn and Starlette (and
the MCP SDK behind them) cost a cold launch ~0.45 s of imports. This server is the part of uvicorn a
launch needs: h11 (the sans-IO parser uvicorn itself uses) reads each request whole, then the handler
answers it through a :class:`Reply` (whole, or streamed for the model gateway).

Hardening, all in :class:`HttpLimits`:

- headers past ``max_header_bytes`` (h11's limit, uvicorn's default: 16 KiB) are answered 431;
  a body past ``max_body_bytes`` 413, before it is read when ``Content-Length`` says so;
- a request (head and body) must arrive within ``request_seconds`` of its first byte, and an idle
  keep-alive connection is closed after ``keepalive_seconds``: a stalled client holds nothing;
- ``Transfer-Encoding`` other than h11's ``chunked``, or with ``Content-Length`` beside it, is
  refused (400/501) and the connection closed: no framing two parsers could read differently;
- one request at a time per connection (pipelined ones wait in h11's buffer), keep-alive otherwise;
- every error is a JSON ``{"error": ...}`` body; a handler's exception is logged, never sent.

Stopping (:func:`lean_serving` leaving its block) is prompt: the listener closes, idle connections
close at once, a request under way gets ``grace_seconds`` to finish, then its task is cancelled and
its connection closed; every stream is closed before the block ends.
"""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote

import anyio
import anyio.abc
import h11
import structlog

from capabilities.serving._listen import BoundAddress, listen
from store.errors import InternalError, InvalidArgument, RoundtableError, error_body

__all__ = ["Handler", "HttpLimits", "HttpRequest", "Reply", "lean_serving"]

_log = structlog.get_logger("roundtable.serving")
_READ_BYTES = 65536


@dataclass(frozen=True)
class HttpLimits:
    """The limits the server enforces (see the module's docstring)."""

    max_header_bytes: int = 16 * 1024
    max_body_bytes: int = 16 * 1024 * 1024
    request_seconds: float = 30.0
    keepalive_seconds: float = 5.0
    grace_seconds: float = 5.0


@dataclass(frozen=True)
class HttpRequest:
    """One request, read whole: header names are lower-case, ``path`` is percent-decoded."""

    method: str
    path: str
    raw_path: bytes
    query_string: bytes
    headers: list[tuple[bytes, bytes]]
    body: bytes
    http_version: str = "1.1"

    def header(self, name: bytes) -> str | None:
        """The first value of header ``name`` (lower-case), or None."""
        for key, value in self.headers:
            if key == name:
                return value.decode("latin-1")
        return None


class Reply:
    """How a handler answers: :meth:`send` a whole response, or :meth:`start`, :meth:`write`, :meth:`end`.

    A response without ``Content-Length`` is sent chunked. :attr:`gone` is set once the connection
    is being torn down (the server stopping past its grace period); a streamed response stops then.
    """

    def __init__(self, conn: h11.Connection, stream: anyio.abc.ByteStream, gone: anyio.Event):
        self._conn = conn
        self._stream = stream
        self.gone = gone
        self.started = False
        self.ended = False
        self.head = False  # answering HEAD: the headers go, the body does not

    async def start(self, status: int, headers: list[tuple[bytes, bytes]]) -> None:
        """Send the status line and headers."""
        self.started = True
        await self._out(h11.Response(status_code=status, headers=headers))

    async def write(self, data: bytes) -> None:
        """Send part of the body."""
        if data and not self.head:
            await self._out(h11.Data(data=data))

    async def end(self) -> None:
        """End the response."""
        self.ended = True
        await self._out(h11.EndOfMessage())

    async def send(self, status: int, headers: list[tuple[bytes, bytes]], body: bytes = b"") -> None:
        """Send a whole response; ``Content-Length`` is added."""
        await self.start(status, [*headers, (b"content-length", str(len(body)).encode())])
        await self.write(body)
        await self.end()

    async def send_error(self, status: int, error: RoundtableError, *, close: bool = False) -> None:
        """Send ``{"error": ...}`` with ``status``; ``close`` ends the connection after it."""
        headers = [(b"content-type", b"application/json")]
        if close:
            headers.append((b"connection", b"close"))
        await self.send(status, headers, json.dumps(error_body(error)).encode())

    async def _out(self, event: h11.Event) -> None:
        data = self._conn.send(event)
        if data:
            await self._stream.send(data)


Handler = Callable[[HttpRequest, Reply], Awaitable[None]]
"""Answers one request; it must answer (the server answers 500 for a handler that did not)."""


class _TimedOut(Exception):
    pass


@dataclass(eq=False)
class _Connection:
    stream: anyio.abc.ByteStream
    limits: HttpLimits
    handler: Handler
    scope: anyio.CancelScope = field(default_factory=lambda: anyio.CancelScope(shield=True))
    idle: bool = True
    gone: anyio.Event = field(default_factory=anyio.Event)

    async def serve(self, stopping: anyio.Event) -> None:
        conn = h11.Connection(h11.SERVER, max_incomplete_event_size=self.limits.max_header_bytes)
        try:
            while not stopping.is_set():
                if not await self._one(conn):
                    return
                if conn.our_state is not h11.DONE or conn.their_state is not h11.DONE:
                    return
                conn.start_next_cycle()
                self.idle = not conn.trailing_data[0]
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, anyio.EndOfStream, OSError):
            return  # the client went away mid-answer

    async def _one(self, conn: h11.Connection) -> bool:
        """Read and answer one request; False when the connection is to close."""
        reply = Reply(conn, self.stream, self.gone)
        try:
            request = await self._read(conn)
        except _TimedOut:
            if conn.their_state is h11.SEND_BODY:
                await reply.send_error(408, InvalidArgument("the request did not arrive in time"), close=True)
            return False
        except h11.RemoteProtocolError as exc:
            if conn.our_state is h11.SEND_RESPONSE or conn.our_state is h11.IDLE:
                with contextlib.suppress(h11.LocalProtocolError):
                    status = exc.error_status_hint
                    await reply.send_error(status, InvalidArgument(f"bad request: {exc}"), close=True)
            return False
        if request is None:
            return False
        reply.head = request.method == "HEAD"
        try:
            await self.handler(request, reply)
        except Exception:
            _log.exception("http.handler_failed", path=request.path)
            if reply.started:
                return False
            await reply.send_error(500, _internal(), close=True)
            return False
        if not reply.ended:
            if reply.started:
                return False
            await reply.send_error(500, _internal(), close=True)
            return False
        return True

    async def _read(self, conn: h11.Connection) -> HttpRequest | None:
        """The next request, whole; None when the client closed (or idled out) between requests."""
        deadline = math.inf if self.idle else anyio.current_time() + self.limits.request_seconds
        head: h11.Request | None = None
        body = bytearray()
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                data: bytes | None = None
                if self.idle:  # between requests: the keep-alive limit
                    with anyio.move_on_after(self.limits.keepalive_seconds):
                        data = await self._receive()
                    if data is None:
                        return None
                    self.idle = False
                    deadline = anyio.current_time() + self.limits.request_seconds
                else:  # within a request: what is left of its time
                    with anyio.move_on_after(deadline - anyio.current_time()):
                        data = await self._receive()
                    if data is None:
                        raise _TimedOut
                conn.receive_data(data)
                continue
            if isinstance(event, h11.ConnectionClosed) or event is h11.PAUSED:
                return None
            if isinstance(event, h11.Request):
                head = event
                _check_framing(head, self.limits)
            elif isinstance(event, h11.Data):
                body += event.data
                if len(body) > self.limits.max_body_bytes:
                    raise h11.RemoteProtocolError("the request body is too large", error_status_hint=413)
            elif isinstance(event, h11.EndOfMessage):
                assert head is not None
                return _request(head, bytes(body))

    async def _receive(self) -> bytes:
        try:
            return await self.stream.receive(_READ_BYTES)
        except anyio.EndOfStream:
            return b""


def _check_framing(head: h11.Request, limits: HttpLimits) -> None:
    # h11 bounds a head still arriving; one that arrived whole in a read is bounded here.
    size = len(head.target) + sum(len(name) + len(value) + 4 for name, value in head.headers)
    if size > limits.max_header_bytes:
        raise h11.RemoteProtocolError("the request's headers are too large", error_status_hint=431)
    names = [name for name, _ in head.headers]
    if b"transfer-encoding" in names and b"content-length" in names:
        raise h11.RemoteProtocolError("Content-Length and Transfer-Encoding together", error_status_hint=400)
    for name, value in head.headers:
        if name == b"content-length" and int(value) > limits.max_body_bytes:
            raise h11.RemoteProtocolError("the request body is too large", error_status_hint=413)


def _request(head: h11.Request, body: bytes) -> HttpRequest:
    raw_path, _, query = head.target.partition(b"?")
    return HttpRequest(
        method=head.method.decode("ascii"),
        path=unquote(raw_path.decode("latin-1")),
        raw_path=raw_path,
        query_string=query,
        headers=list(head.headers),
        body=body,
        http_version=head.http_version.decode("ascii"),
    )


def _internal() -> RoundtableError:
    return InternalError("the request failed; see the server log")


class _Server:
    def __init__(self, handler: Handler, limits: HttpLimits):
        self.handler = handler
        self.limits = limits
        self.stopping = anyio.Event()
        self.connections: set[_Connection] = set()
        self.emptied = anyio.Event()

    async def accept(self, listener: anyio.abc.SocketListener, tg: anyio.abc.TaskGroup) -> None:
        while True:
            stream = await listener.accept()
            if self.stopping.is_set():
                await stream.aclose()
                return
            connection = _Connection(stream, self.limits, self.handler)
            self.connections.add(connection)
            self.emptied = anyio.Event()
            tg.start_soon(self._run, connection)

    async def _run(self, connection: _Connection) -> None:
        try:
            with connection.scope:
                await connection.serve(self.stopping)
        except Exception:  # a bug here must cost one connection, never the server
            _log.exception("http.connection_failed")
        finally:
            connection.gone.set()
            with anyio.CancelScope(shield=True):
                await connection.stream.aclose()
            self.connections.discard(connection)
            if not self.connections:
                self.emptied.set()

    async def stop(self) -> None:
        """Close idle connections now, give busy ones the grace period, then cut them."""
        self.stopping.set()
        for connection in list(self.connections):
            if connection.idle:
                connection.scope.cancel()
        if self.connections:
            with anyio.move_on_after(self.limits.grace_seconds):
                await self.emptied.wait()
        for connection in list(self.connections):
            connection.gone.set()
            connection.scope.cancel()


@asynccontextmanager
async def lean_serving(
    handler: Handler,
    *,
    uds: str | Path,
    uds_mode: int = 0o600,
    limits: HttpLimits | None = None,
    on_start: Callable[[anyio.abc.TaskGroup], None] | None = None,
    on_stop: Callable[[], Awaitable[None]] | None = None,
) -> AsyncIterator[BoundAddress]:
    """Serve ``handler`` on Unix socket ``uds`` for the ``async with`` block; yields the bound address.

    The socket is bound (mode ``uds_mode`` before ``listen``) before the block starts, so a bind
    error reaches the caller as itself. ``on_start`` is given the server's task group (where the
    handler may run background tasks); leaving the block stops the server as the module says, then
    awaits ``on_stop`` (the handler's own clean-up, ending those tasks) and removes the socket file.
    """
    bound = listen(None, 0, uds, uds_mode)
    server = _Server(handler, limits or HttpLimits())
    try:
        listener = await anyio.abc.SocketListener.from_socket(bound.sock)
        async with anyio.create_task_group() as tg:
            accept_scope = anyio.CancelScope()

            async def accept() -> None:
                with accept_scope:
                    await server.accept(listener, tg)

            tg.start_soon(accept)
            if on_start is not None:
                on_start(tg)
            try:
                yield bound.address
            finally:
                with anyio.CancelScope(shield=True):
                    accept_scope.cancel()
                    await listener.aclose()
                    bound.close()
                    await server.stop()
                    if on_stop is not None:
                        await on_stop()
    finally:
        bound.close()
