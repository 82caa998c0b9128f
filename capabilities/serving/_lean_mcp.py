"""MCP at ``/mcp`` for the lean launch socket server: the stateless ``2026-07-28`` JSON exchange.

What the SDK's streamable-HTTP handler answers a request whose ``MCP-Protocol-Version`` header names
a modern revision (``mcp.server._streamable_http_modern`` with ``json_response=True``), in its order:
Content-Type, Host and Origin checks (:func:`~capabilities.serving._listen.allowed_hosts_and_origins`,
as :func:`~capabilities.serving._transports.transport_security` configures the SDK), 405 for
anything but POST, 406 without a JSON ``Accept``, ``-32700`` for a body that is not JSON, 202 for a
notification, ``-32600`` for a body that is not one request, the routing-header and ``_meta``
envelope checks (``-32020``, ``-32602``, ``-32022``), then ``server/discover``, ``tools/list`` and
``tools/call`` (through :func:`~capabilities.mcp.call_tool`, with the JSON of
:mod:`capabilities.mcp._listing`), and ``-32601`` for a method the SDK's server does not serve.

A request this module cannot answer exactly as the SDK would (a method the SDK serves and it does
not, such as ``resources/list``; an envelope the SDK's models might read differently, such as a
boolean id) is :data:`DEFER`\\ red: the caller passes it to the SDK's own app. No client of the launch
socket sends one; ``tests/capabilities/serving/test_lean_differential.py`` holds both to the same
answers.
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

from capabilities.mcp import (
    INSTRUCTIONS,
    SERVER_NAME,
    ToolNaming,
    ToolOutcome,
    ToolRegistry,
    call_tool,
    message_json,
    tool_call_json,
    tool_entries,
)
from capabilities.principals import Principal
from capabilities.services import Services
from capabilities.serving._lean_http import HttpRequest, Reply
from capabilities.serving._listen import allowed_hosts_and_origins
from store.config import package_version

__all__ = ["DEFER", "HANDSHAKE_PROTOCOL_VERSIONS", "MODERN_PROTOCOL_VERSIONS", "LeanMcp", "is_modern"]

MODERN_PROTOCOL_VERSIONS: Final = ("2026-07-28",)
"""The revisions served per request (``mcp_types.version``'s; a test checks they agree)."""
HANDSHAKE_PROTOCOL_VERSIONS: Final = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
"""The revisions with an ``initialize`` handshake and sessions: left to the SDK's app."""

DEFER: Final = object()
"""What :meth:`LeanMcp.handle` returns for a request it leaves to the SDK's app."""

_VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
_CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
_INFO_KEY = "io.modelcontextprotocol/clientInfo"
_SERVER_INFO_KEY = "io.modelcontextprotocol/serverInfo"
_ENVELOPE_KEYS = frozenset({_VERSION_KEY, _CAPABILITIES_KEY, _INFO_KEY})
_ROUTING_HEADERS = (b"mcp-protocol-version", b"mcp-method", b"mcp-name")

_PARSE_ERROR, _INVALID_REQUEST, _METHOD_NOT_FOUND, _INVALID_PARAMS = -32700, -32600, -32601, -32602
_HEADER_MISMATCH, _UNSUPPORTED_VERSION = -32020, -32022
_HTTP_STATUS = {
    _PARSE_ERROR: 400,
    _INVALID_REQUEST: 400,
    _INVALID_PARAMS: 400,
    _HEADER_MISMATCH: 400,
    -32021: 400,
    _UNSUPPORTED_VERSION: 400,
    _METHOD_NOT_FOUND: 404,
}
_INVALID_BODY = "Body must be a single JSON-RPC request or notification object"
_SDK_METHODS = frozenset(
    {"prompts/get", "prompts/list", "resources/list", "resources/read", "resources/templates/list"}
)
"""Methods the SDK's server answers (empty lists, errors) that this module leaves to it."""
_BASE64_SENTINEL = re.compile(r"=\?base64\?.*\?=")
_JSON = [(b"content-type", b"application/json")]


def is_modern(request: HttpRequest) -> bool:
    """Whether the SDK would route ``request`` to its per-request (modern) entry, as this module does."""
    version = request.header(b"mcp-protocol-version")
    return version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS


def _allowed(value: str, allowed: list[str]) -> bool:
    return value in allowed or any(
        pattern.endswith(":*") and value.startswith(pattern[:-2] + ":") for pattern in allowed
    )


def _is_id(value: Any) -> bool:
    return type(value) is int or type(value) is str


class LeanMcp:
    """The ``/mcp`` endpoint of one launch socket."""

    def __init__(
        self, services: Services, registry: ToolRegistry, tool_names: ToolNaming = ToolNaming.DOTTED
    ):
        self.services = services
        self.registry = registry
        self.tool_names = tool_names
        self.hosts, self.origins = allowed_hosts_and_origins()
        self._server_meta = {_SERVER_INFO_KEY: {"name": SERVER_NAME, "version": package_version()}}

    async def handle(self, request: HttpRequest, reply: Reply, principal: Principal) -> object:
        """Answer a modern-revision request to ``/mcp`` (see :func:`is_modern`), or return :data:`DEFER`."""
        refused = self._transport_refusal(request)
        if refused is not None:
            status, text = refused
            await reply.send(status, [], text.encode())
            return None
        if request.method != "POST":
            await reply.send(405, [(b"allow", b"POST")])
            return None
        accepted = [
            part.split(";")[0].strip().lower() for part in (request.header(b"accept") or "").split(",")
        ]
        if not {"*/*", "application/json", "application/*"} & set(accepted):
            await reply.send(406, [])
            return None
        try:
            decoded = json.loads(request.body)
        except (ValueError, RecursionError):
            await self._error(reply, None, _PARSE_ERROR, "Parse error")
            return None
        if isinstance(decoded, dict) and "id" not in decoded:
            return await self._notification(decoded, request, reply)
        shape = _request_shape(decoded)
        if shape is DEFER:
            return DEFER
        if shape is None:
            await self._error(reply, None, _INVALID_REQUEST, _INVALID_BODY)
            return None
        assert isinstance(decoded, dict)
        method, request_id = decoded["method"], decoded["id"]
        if method == "subscriptions/listen":
            if "text/event-stream" in accepted or "text/*" in accepted or "*/*" in accepted:
                return DEFER
            await reply.send(406, [])
            return None
        for name in _ROUTING_HEADERS:
            if sum(1 for key, _ in request.headers if key == name) > 1:
                await self._error(
                    reply, request_id, _HEADER_MISMATCH, f"{name.decode()} header appears more than once"
                )
                return None
        rejection = _ladder(decoded, request)
        if rejection is DEFER:
            return DEFER
        if rejection is not None:
            assert isinstance(rejection, tuple)
            await self._error(reply, request_id, *rejection)
            return None
        params = decoded.get("params") or {}
        result = await self._dispatch(method, params, principal)
        if result is DEFER:
            return DEFER
        if result is None:
            await self._error(reply, request_id, _METHOD_NOT_FOUND, "Method not found", method)
            return None
        if isinstance(result, ToolOutcome):
            extra = {"resultType": "complete", "_meta": self._server_meta}
            answer = tool_call_json(request_id, result.body(), is_error=not result.ok, extra=extra)
            await reply.send(200, _JSON, answer)
            return None
        assert isinstance(result, dict)
        await self._write(reply, 200, {"jsonrpc": "2.0", "id": request_id, "result": result})
        return None

    def _transport_refusal(self, request: HttpRequest) -> tuple[int, str] | None:
        if request.method == "POST":
            content_type = request.header(b"content-type")
            if content_type is None or not content_type.lower().startswith("application/json"):
                return 400, "Invalid Content-Type header"
        host = request.header(b"host")
        if not host or not _allowed(host, self.hosts):
            return 421, "Invalid Host header"
        origin = request.header(b"origin")
        if origin and not _allowed(origin, self.origins):
            return 403, "Invalid Origin header"
        return None

    async def _notification(self, decoded: dict[str, Any], request: HttpRequest, reply: Reply) -> object:
        params = decoded.get("params")
        if decoded.get("jsonrpc") != "2.0" or not isinstance(decoded.get("method"), str):
            await self._error(reply, None, _INVALID_REQUEST, _INVALID_BODY)
            return None
        if params is not None and not isinstance(params, dict):
            await self._error(reply, None, _INVALID_REQUEST, _INVALID_BODY)
            return None
        requested = request.header(b"mcp-protocol-version") or ""
        if requested not in MODERN_PROTOCOL_VERSIONS:
            await self._error(reply, None, *_unsupported(requested))
            return None
        await reply.send(202, [])
        return None

    async def _dispatch(self, method: str, params: dict[str, Any], principal: Principal) -> object:
        """The result of ``method`` (a ``tools/call``'s :class:`~capabilities.mcp.ToolOutcome`, for
        :meth:`handle` to write); None for a method not served, :data:`DEFER` for the SDK's."""
        meta = self._server_meta
        if method == "server/discover":
            if set(params) - {"_meta"}:
                return DEFER
            return {
                "cacheScope": "private",
                "capabilities": {
                    "prompts": {"listChanged": True},
                    "resources": {"listChanged": True, "subscribe": True},
                    "tools": {"listChanged": True},
                },
                "instructions": INSTRUCTIONS,
                "resultType": "complete",
                "supportedVersions": list(MODERN_PROTOCOL_VERSIONS),
                "ttlMs": 0,
                "_meta": meta,
            }
        if method == "tools/list":
            if set(params) - {"_meta", "cursor"} or not isinstance(params.get("cursor", ""), str):
                return DEFER
            # The cached schemas themselves (fresh=False): the answer is written as JSON at once.
            tools = [
                {key: value for key, value in entry.items() if value is not None}
                for entry in tool_entries(self.registry, principal, self.tool_names, fresh=False)
            ]
            return {
                "cacheScope": "private",
                "resultType": "complete",
                "tools": tools,
                "ttlMs": 0,
                "_meta": meta,
            }
        if method == "tools/call":
            name, arguments = params.get("name"), params.get("arguments")
            if set(params) - {"_meta", "name", "arguments"} or not isinstance(name, str):
                return DEFER
            if arguments is not None and not isinstance(arguments, dict):
                return DEFER
            # Written by handle() with the answer serialized once (tool_call_json).
            return await call_tool(self.services, self.registry, principal, name, arguments or {})
        return DEFER if method in _SDK_METHODS else None

    async def _error(self, reply: Reply, request_id: Any, code: int, message: str, data: Any = None) -> None:
        error: dict[str, Any] = {"code": code, "message": message}
        if data is not None:
            error["data"] = data
        await self._write(
            reply, _HTTP_STATUS.get(code, 200), {"jsonrpc": "2.0", "id": request_id, "error": error}
        )

    @staticmethod
    async def _write(reply: Reply, status: int, message: dict[str, Any]) -> None:
        await reply.send(status, _JSON, message_json(message))


def _request_shape(decoded: Any) -> object:
    """``True`` for one well-formed request, None for a body the SDK refuses, :data:`DEFER` if unsure."""
    if not isinstance(decoded, dict):
        return None
    request_id, params = decoded.get("id"), decoded.get("params")
    if decoded.get("jsonrpc") != "2.0" or not isinstance(decoded.get("method"), str):
        return None
    if request_id is None or isinstance(request_id, list | dict):
        return None
    if params is not None and not isinstance(params, dict):
        return None
    if not _is_id(request_id) or set(decoded) - {"jsonrpc", "id", "method", "params"}:
        return DEFER  # a boolean or fractional id, an unknown member: the SDK's models decide
    return True


def _unsupported(requested: str) -> tuple[int, str, Any]:
    data = {"supported": list(MODERN_PROTOCOL_VERSIONS), "requested": requested}
    return _UNSUPPORTED_VERSION, "Unsupported protocol version", data


def _ladder(body: dict[str, Any], request: HttpRequest) -> object:
    """The SDK's envelope checks (``classify_inbound_request``): None when they pass, else the error."""
    params = body.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    if not isinstance(meta, dict):
        return (
            _INVALID_PARAMS,
            "params._meta must be an object carrying the required "
            f"{_VERSION_KEY!r} and {_CAPABILITIES_KEY!r} envelope keys",
        )
    if missing := [key for key in (_VERSION_KEY, _CAPABILITIES_KEY) if key not in meta]:
        return _INVALID_PARAMS, f"params._meta is missing the required envelope key(s): {', '.join(missing)}"
    version = meta[_VERSION_KEY]
    if request.header(b"mcp-protocol-version") != version:
        return (
            _HEADER_MISMATCH,
            "mcp-protocol-version header does not match the request envelope's protocol version",
        )
    method = body["method"]
    if request.header(b"mcp-method") != method:
        return _HEADER_MISMATCH, "mcp-method header does not match the request body's method"
    if method == "tools/call" and params is not None and params.get("name") is not None:
        header = request.header(b"mcp-name")
        if header is not None and _BASE64_SENTINEL.fullmatch(header):
            return DEFER  # a base64-wrapped name: the SDK's decoder decides
        if header != params["name"]:
            return _HEADER_MISMATCH, "mcp-name header does not match the request body's 'name' parameter"
    if method in ("prompts/get", "resources/read"):
        return DEFER  # name-bearing methods of the SDK's own
    if not isinstance(version, str):
        return _INVALID_PARAMS, "the protocol-version envelope value must be a string"
    if version not in MODERN_PROTOCOL_VERSIONS:
        return _unsupported(version)
    info = meta.get(_INFO_KEY)
    if set(meta) - _ENVELOPE_KEYS or not isinstance(meta[_CAPABILITIES_KEY], dict):
        return DEFER  # other envelope members, odd capabilities: the SDK's models decide
    if info is not None and not (
        isinstance(info, dict) and isinstance(info.get("name"), str) and isinstance(info.get("version"), str)
    ):
        return DEFER
    return None
