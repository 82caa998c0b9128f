"""HTTP/1.1 requests over the launch's Unix socket (or TLS over TCP), with anyio's streams and nothing else.

The runner's MCP requests are small JSON POSTs to one server, the supervisor's, on one socket. An
HTTP client library (``httpx2``, with its URL, cookie, auth and multipart machinery) costs more to
import in the container than the requests cost to make, so this module does just that: one
keep-alive connection, a request with ``Content-Length``, and a response framed by
``Content-Length``, ``Transfer-Encoding: chunked`` or the end of the connection, at most
:data:`MAX_BODY_BYTES`. A tool call is not idempotent, so a request is never sent twice once it may
have reached the server: a connection idle longer than :data:`_IDLE_REUSE_SECONDS` (below the
server's keep-alive timeout, uvicorn's 5 s) is replaced before the request rather than found closed
after it, and only a request whose send itself failed is sent again on a new connection. The model
gateway, which only the ``openai`` provider uses, keeps ``httpx2``.

:class:`TlsHttpClient` is the same client on a TLS connection over TCP, for a role pod on a cluster
that reaches the supervisor's capability endpoint (``https://host:port``) instead of a socket: the
certificate is checked against the CA file the launch was given, and the host name against it.
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

if TYPE_CHECKING:
    import ssl

    from anyio.abc import ByteStream

__all__ = ["MAX_BODY_BYTES", "HttpError", "Response", "TlsHttpClient", "UnixHttpClient"]

MAX_BODY_BYTES = 32 * 1024 * 1024
"""The largest response body read (the server's answers are far smaller; anything bigger is an error)."""
_MAX_HEAD_BYTES = 64 * 1024
_CHUNK = 65536
_IDLE_REUSE_SECONDS = 2.0
_DECIMAL = re.compile(r"[0-9]{1,12}")
_HEX = re.compile(r"[0-9A-Fa-f]{1,12}")


class HttpError(Exception):
    """The connection failed or the answer was not HTTP/1.1 the client can read."""


class _Closed(HttpError):
    """The request could not be sent: the connection was already closed (nothing reached the server)."""


@dataclass(frozen=True)
class Response:
    """A response: status, headers (names lower-cased) and the whole body."""

    status_code: int
    headers: dict[str, str]
    content: bytes

    @property
    def text(self) -> str:
        """The body decoded as UTF-8 (undecodable bytes replaced)."""
        return self.content.decode("utf-8", errors="replace")


class _Reader:
    """Buffered reads from one stream."""

    def __init__(self, stream: ByteStream):
        self.stream = stream
        self.buffer = bytearray()
        self.eof = False
        self.broken = False
        """The stream ended without a clean close (a TLS connection without ``close_notify``)."""

    async def _fill(self) -> None:
        try:
            data = await self.stream.receive(_CHUNK)
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            self.eof = True
            return
        except anyio.BrokenResourceError:
            self.eof = self.broken = True
            return
        self.buffer += data

    async def until(self, marker: bytes, limit: int = _MAX_HEAD_BYTES) -> bytes:
        """Everything up to and including ``marker``."""
        while (end := self.buffer.find(marker)) < 0:
            if self.eof and not self.buffer:
                raise HttpError("the connection was closed before a response")
            if self.eof or len(self.buffer) > limit:
                raise HttpError("the connection ended inside a response head")
            await self._fill()
        end += len(marker)
        data = bytes(self.buffer[:end])
        del self.buffer[:end]
        return data

    async def exactly(self, size: int) -> bytes:
        """The next ``size`` bytes."""
        while len(self.buffer) < size:
            if self.eof:
                raise HttpError("the connection ended inside a response body")
            await self._fill()
        data = bytes(self.buffer[:size])
        del self.buffer[:size]
        return data

    async def rest(self) -> bytes:
        """Everything until the end of the connection; a broken end is an error (truncated, perhaps:
        only a clean close, ``close_notify`` on TLS, ends a body that nothing else frames)."""
        while not self.eof:
            if len(self.buffer) > MAX_BODY_BYTES:
                raise HttpError(f"the response body is larger than {MAX_BODY_BYTES} bytes")
            await self._fill()
        if self.broken:
            raise HttpError("the connection broke before the end of an unframed response body")
        data = bytes(self.buffer)
        self.buffer.clear()
        return data


class UnixHttpClient:
    """Requests to the HTTP server on ``socket``, each with ``headers``, within ``timeout`` seconds."""

    def __init__(self, socket: Path, *, headers: dict[str, str], timeout: float):
        self.socket = socket
        self.headers = {"Host": "localhost", **headers}
        self.timeout = timeout
        self._reader: _Reader | None = None
        self._idle_since = 0.0

    async def __aenter__(self) -> UnixHttpClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the connection, if one is open."""
        reader, self._reader = self._reader, None
        if reader is not None:
            with contextlib.suppress(OSError, anyio.BrokenResourceError):
                await reader.stream.aclose()  # a broken connection (no TLS shutdown possible) is closed

    async def post(self, path: str, content: bytes, headers: dict[str, str]) -> Response:
        """POST ``content`` to ``path``; the response, or :class:`HttpError`."""
        fields = {**self.headers, **headers, "Content-Length": str(len(content))}
        head = f"POST {path} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in fields.items()) + "\r\n"
        request = head.encode("latin-1") + content
        with self._bounded():
            if self._reader is not None and self._now() - self._idle_since > _IDLE_REUSE_SECONDS:
                await self.aclose()  # the server may be closing it now: never learn that after the send
            reused = self._reader is not None
            try:
                response = await self._exchange(request)
            except _Closed:
                await self.aclose()
                if not reused:
                    raise
                response = await self._exchange(request)  # it never left: once more, on a new connection
            except HttpError:
                await self.aclose()
                raise
            self._idle_since = self._now()
            return response

    def _bounded(self) -> contextlib.AbstractContextManager[object]:
        """The request's deadline: :attr:`timeout` seconds for all of it (TimeoutError past it)."""
        return anyio.fail_after(self.timeout)

    def _now(self) -> float:
        return anyio.current_time()

    async def _exchange(self, request: bytes) -> Response:
        if self._reader is None:
            self._reader = _Reader(await self._connect())
        reader = self._reader
        try:
            await reader.stream.send(request)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
            raise _Closed(f"the connection broke: {exc}") from None
        status, headers = _head(await reader.until(b"\r\n\r\n"))
        if headers.get("transfer-encoding", "").lower() == "chunked":
            body = await _chunked(reader)
        elif "content-length" in headers:
            body = await reader.exactly(_size(headers["content-length"], _DECIMAL, 10))
        else:
            body = await reader.rest()
            headers["connection"] = "close"
        if headers.get("connection", "").lower() == "close":
            await self.aclose()
        return Response(status, headers, body)

    async def _connect(self) -> ByteStream:
        try:
            return await anyio.connect_unix(self.socket)
        except OSError as exc:
            raise HttpError(f"cannot connect to {self.socket}: {exc.strerror or exc}") from None


class TlsHttpClient(UnixHttpClient):
    """The same requests to ``https://host:port``, the server's certificate checked by ``ssl_context``."""

    def __init__(
        self, host: str, port: int, *, ssl_context: ssl.SSLContext, headers: dict[str, str], timeout: float
    ):
        super().__init__(Path(), headers=headers, timeout=timeout)
        self.host, self.port, self.ssl_context = host, port, ssl_context
        name = f"[{host}]" if ":" in host else host
        self.headers["Host"] = f"{name}:{port}"

    async def _connect(self) -> ByteStream:
        try:
            return await anyio.connect_tcp(self.host, self.port, ssl_context=self.ssl_context)
        except (OSError, anyio.BrokenResourceError, anyio.EndOfStream) as exc:  # ssl.SSLError is an OSError
            why = str(exc) or f"{type(exc).__name__} in the TLS handshake"
            raise HttpError(f"cannot connect to {self.host}:{self.port}: {why}") from None


def _head(data: bytes) -> tuple[int, dict[str, str]]:
    lines = data.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not re.fullmatch(r"[0-9]{3}", parts[1]):
        raise HttpError(f"not an HTTP/1.1 status line: {lines[0][:80]!r}")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if sep:
            headers[name.strip().lower()] = value.strip()
    return int(parts[1]), headers


async def _chunked(reader: _Reader) -> bytes:
    body = bytearray()
    while True:
        size_line = (await reader.until(b"\r\n")).split(b";", 1)[0].strip()
        size = _size(size_line.decode("latin-1"), _HEX, 16)
        if len(body) + size > MAX_BODY_BYTES:
            raise HttpError(f"the response body is larger than {MAX_BODY_BYTES} bytes")
        if size == 0:
            while await reader.until(b"\r\n") != b"\r\n":  # trailers, then the empty line
                pass
            return bytes(body)
        body += await reader.exactly(size)
        await reader.exactly(2)


def _size(text: str, pattern: re.Pattern[str], base: int) -> int:
    """A framing size: plain digits only (no sign, no underscores, no prefix), at most the body cap."""
    if not pattern.fullmatch(text) or (size := int(text, base)) > MAX_BODY_BYTES:
        raise HttpError(f"bad body size {text[:20]!r}")
    return size
