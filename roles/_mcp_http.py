"""A lean MCP client for the launch socket: JSON-RPC over streamable HTTP, nothing else.

The runner needs four things of MCP: the tool list, tool calls, their structured answers and their
errors. The SDK's ``mcp.Client`` does all of that and much more (sampling, elicitation, resources,
sessions, every protocol version's types), and importing it costs about a second in the container,
more than a bare ``docker run`` of the image. This client speaks the stateless protocol the
supervisor's launch server speaks (``2026-07-28``: no session, each request carries its protocol
version in ``_meta`` and the ``MCP-Protocol-Version`` header) with plain JSON POSTs over any HTTP
client with a ``post`` (:class:`roles._unix_http.UnixHttpClient` in the runner): ``tools/list``
(every page) and ``tools/call``. It reads
an ``application/json`` answer or a ``text/event-stream`` one (the response event with the request's
id). The bridge keeps the SDK client: an agent behind it may use any of MCP.

``tests/roles/test_mcp_http.py`` holds it to the SDK client's answers on a real launch socket.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

__all__ = [
    "PROTOCOL_VERSION",
    "Content",
    "HttpPoster",
    "McpHttpClient",
    "ProtocolError",
    "Tool",
    "ToolResult",
    "Unauthorized",
]

PROTOCOL_VERSION = "2026-07-28"
"""The MCP protocol version this client speaks (the SDK's latest; a test checks they agree)."""

_PATH = "/mcp"
_MAX_PAGES = 100
"""tools/list pages followed at most (the launch server lists every tool on one)."""


class ProtocolError(Exception):
    """The server answered something other than a result: a JSON-RPC error, an HTTP error, garbage."""


class Unauthorized(ProtocolError):
    """The server refused the token (HTTP 401)."""


@dataclass(frozen=True)
class Tool:
    """One entry of ``tools/list``: what the providers read of it."""

    name: str
    description: str | None
    input_schema: dict[str, Any]


@dataclass(frozen=True)
class Content:
    """One content block of a result: its type, its text (``None`` unless a text block), all of it."""

    type: str
    text: str | None
    raw: dict[str, Any]


@dataclass(frozen=True)
class ToolResult:
    """A ``tools/call`` result, with the attribute names the SDK's ``CallToolResult`` uses."""

    content: list[Content] = field(default_factory=list)
    structured_content: dict[str, Any] | None = None
    is_error: bool = False


class _Response(Protocol):
    @property
    def status_code(self) -> int: ...
    @property
    def headers(self) -> Mapping[str, str]: ...
    @property
    def text(self) -> str: ...


class HttpPoster(Protocol):
    """What the client needs of an HTTP client: a POST to a path on the server, the token sent."""

    async def post(self, path: str, content: bytes, headers: dict[str, str]) -> _Response:
        """POST ``content`` to ``path`` with ``headers``."""
        ...


@dataclass
class McpHttpClient:
    """Requests over ``http`` (a client on the launch socket that sends the token)."""

    http: HttpPoster
    client_name: str = "roundtable-role"
    client_version: str = "0"
    _ids: Iterator[int] = field(default_factory=lambda: itertools.count(1), repr=False)

    async def list_tools(self) -> list[Tool]:
        """Every tool the server lists for this token, following ``nextCursor``."""
        tools: list[Tool] = []
        cursor: str | None = None
        for _page in range(_MAX_PAGES):
            params: dict[str, Any] = {} if cursor is None else {"cursor": cursor}
            result = await self.request("tools/list", params)
            for entry in result.get("tools") or []:
                tools.append(
                    Tool(str(entry["name"]), entry.get("description"), dict(entry.get("inputSchema") or {}))
                )
            cursor = result.get("nextCursor")
            if not cursor:
                return tools
        raise ProtocolError(f"tools/list: more than {_MAX_PAGES} pages")

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        """Call ``name``; a tool's own error comes back as ``is_error``, as MCP carries it."""
        result = await self.request("tools/call", {"name": name, "arguments": arguments}, tool=name)
        structured = result.get("structuredContent")
        blocks = [block for block in result.get("content") or [] if isinstance(block, dict)]
        return ToolResult(
            [Content(str(b.get("type", "")), b.get("text"), b) for b in blocks],
            structured if isinstance(structured, dict) else None,
            bool(result.get("isError", False)),
        )

    async def request(
        self, method: str, params: dict[str, Any], *, tool: str | None = None
    ) -> dict[str, Any]:
        """One JSON-RPC request; its ``result``, or :class:`ProtocolError`."""
        request_id = next(self._ids)
        meta = {
            "io.modelcontextprotocol/protocolVersion": PROTOCOL_VERSION,
            "io.modelcontextprotocol/clientInfo": {"name": self.client_name, "version": self.client_version},
            "io.modelcontextprotocol/clientCapabilities": {},
        }
        body = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": {**params, "_meta": meta}}
        headers = {
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
            "MCP-Protocol-Version": PROTOCOL_VERSION,
            "Mcp-Method": method,
        }
        if tool is not None:
            headers["Mcp-Name"] = tool
        response = await self.http.post(_PATH, json.dumps(body).encode(), headers)
        if response.status_code == 401:
            raise Unauthorized("the server refused the token (401)")
        if response.status_code != 200:
            raise ProtocolError(f"{method}: HTTP {response.status_code}: {response.text[:200]}")
        message = _message(response.headers.get("content-type", ""), response.text, request_id)
        if "error" in message:
            error = message["error"] if isinstance(message["error"], dict) else {}
            raise ProtocolError(f"{method}: [{error.get('code')}] {error.get('message')}")
        result = message.get("result")
        if not isinstance(result, dict):
            raise ProtocolError(f"{method}: the answer has no result object")
        if result.get("resultType", "complete") != "complete":
            raise ProtocolError(f"{method}: the server asked for input ({result.get('resultType')})")
        return result


def _message(content_type: str, text: str, request_id: int) -> dict[str, Any]:
    """The JSON-RPC response for ``request_id`` in a JSON body or an event stream."""
    if content_type.startswith("text/event-stream"):
        candidates = [_decode(data) for data in _event_data(text)]
    else:
        candidates = [_decode(text)]
    for message in candidates:
        if message.get("id") == request_id and ("result" in message or "error" in message):
            return message
    raise ProtocolError(f"no response to request {request_id} in the answer")


def _event_data(text: str) -> Iterator[str]:
    """The data of each event of a ``text/event-stream`` body."""
    lines: list[str] = []
    for line in [*text.splitlines(), ""]:
        if not line:
            if lines:
                yield "\n".join(lines)
            lines = []
        elif line.startswith("data:"):
            lines.append(line[5:].removeprefix(" "))


def _decode(text: str) -> dict[str, Any]:
    try:
        message = json.loads(text)
    except (ValueError, RecursionError):
        raise ProtocolError("the answer is not JSON") from None
    return message if isinstance(message, dict) else {}
