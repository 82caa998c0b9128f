"""HTTP/1.1 requests over the launch's Unix socket, with anyio's streams and nothing else.

The runner's MCP requests are small JSON POSTs to one server, the supervisor's, on one socket. An
HTTP client library (``httpx2``, with its URL, cookie, auth and multipart machinery) costs more to
import in the container than the requests cost to make, so this module does just that: one
keep-alive connection, a request with ``Content-Length``, and a response framed by
``Content-Length``, ``Transfer-Encoding: chunked`` or the end of the connection. A request on a reused
connection the server closed in the meantime (no byte of an answer came back) is sent once more on
a new one. The model gateway, which only the ``openai``
provider uses, keeps ``httpx2``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

if TYPE_CHECKING:
    from anyio.abc import SocketStream

__all__ = ["HttpError", "Response", "UnixHttpClient"]

_MAX_HEAD_BYTES = 64 * 1024
_CHUNK = 65536


class HttpError(Exception):
    """The connection failed or the answer was not HTTP/1.1 the client can read."""


class _Closed(HttpError):
    """The server closed the connection before answering a byte (an idle keep-alive it dropped)."""


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

    def __init__(self, stream: SocketStream):
        self.stream = stream
        self.buffer = bytearray()
        self.eof = False

    async def _fill(self) -> None:
        try:
            data = await self.stream.receive(_CHUNK)
        except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
            self.eof = True
            return
        self.buffer += data

    async def until(self, marker: bytes, limit: int = _MAX_HEAD_BYTES) -> bytes:
        """Everything up to and including ``marker``."""
        while (end := self.buffer.find(marker)) < 0:
            if self.eof and not self.buffer:
                raise _Closed("the connection was closed before a response")
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
        """Everything until the end of the connection."""
        while not self.eof:
            await self._fill()
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

    async def __aenter__(self) -> UnixHttpClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the connection, if one is open."""
        reader, self._reader = self._reader, None
        if reader is not None:
            await reader.stream.aclose()

    async def post(self, path: str, content: bytes, headers: dict[str, str]) -> Response:
        """POST ``content`` to ``path``; the response, or :class:`HttpError`."""
        fields = {**self.headers, **headers, "Content-Length": str(len(content))}
        head = f"POST {path} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in fields.items()) + "\r\n"
        request = head.encode("latin-1") + content
        with anyio.fail_after(self.timeout):
            reused = self._reader is not None
            try:
                return await self._exchange(request)
            except HttpError as exc:
                await self.aclose()
                if not (reused and isinstance(exc, _Closed)):
                    raise
            return await self._exchange(request)  # the server had closed the idle connection: once more

    async def _exchange(self, request: bytes) -> Response:
        if self._reader is None:
            try:
                self._reader = _Reader(await anyio.connect_unix(self.socket))
            except OSError as exc:
                raise HttpError(f"cannot connect to {self.socket}: {exc.strerror or exc}") from None
        reader = self._reader
        try:
            await reader.stream.send(request)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
            raise _Closed(f"the connection broke: {exc}") from None
        status, headers = _head(await reader.until(b"\r\n\r\n"))
        if headers.get("transfer-encoding", "").lower() == "chunked":
            body = await _chunked(reader)
        elif "content-length" in headers:
            body = await reader.exactly(int(headers["content-length"]))
        else:
            body = await reader.rest()
            headers["connection"] = "close"
        if headers.get("connection", "").lower() == "close":
            await self.aclose()
        return Response(status, headers, body)


def _head(data: bytes) -> tuple[int, dict[str, str]]:
    lines = data.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit():
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
        try:
            size = int(size_line, 16)
        except ValueError:
            raise HttpError(f"bad chunk size {size_line[:20]!r}") from None
        if size == 0:
            while await reader.until(b"\r\n") != b"\r\n":  # trailers, then the empty line
                pass
            return bytes(body)
        body += await reader.exactly(size)
        await reader.exactly(2)
