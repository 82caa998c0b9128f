"""The lean launch socket server against the SDK's launch app: the same request to both gets the
same answer (status, the headers a client reads, the JSON), so the two cannot drift apart."""

from __future__ import annotations

import json
import tempfile
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import mcp_types
import mcp_types.version
import pytest

from capabilities.mcp.tools import build_registry
from capabilities.services import Services
from capabilities.serving import LaunchSocketApp, build_launch_app, serve_launch_socket, serving
from capabilities.serving._lean_mcp import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from store import Store
from tests.capabilities.oracle_helpers import build_world

pytestmark = pytest.mark.anyio

V = "2026-07-28"
JSON = "application/json"
META = {"io.modelcontextprotocol/protocolVersion": V, "io.modelcontextprotocol/clientCapabilities": {}}
INFO = {"io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"}}


def _headers(method: str, **extra: str) -> dict[str, str]:
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": V,
        "Mcp-Method": method,
    }
    headers.update({key.replace("_", "-"): value for key, value in extra.items()})
    return headers


def _rpc(method: str, params: dict[str, Any] | None = None, request_id: Any = 1) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": {"_meta": META, **(params or {})}}


@dataclass
class Pair:
    sdk: httpx2.AsyncClient
    lean: httpx2.AsyncClient
    token: str


@pytest.fixture
async def pair(store: Store) -> AsyncIterator[Pair]:
    """The SDK's launch app and the lean server, for the same grant, on two sockets."""
    world = build_world(store)
    services = Services(store=store)
    with tempfile.TemporaryDirectory(prefix="rtd-", dir="/tmp") as tmp:
        async with AsyncExitStack() as stack:
            await stack.enter_async_context(
                serving(build_launch_app(services, world.grant_id), uds=f"{tmp}/s.sock")
            )
            await stack.enter_async_context(
                serve_launch_socket(LaunchSocketApp(services, world.grant_id), Path(tmp) / "l.sock")
            )
            clients = []
            for name in ("s", "l"):
                transport = httpx2.AsyncHTTPTransport(uds=f"{tmp}/{name}.sock")
                clients.append(
                    await stack.enter_async_context(
                        httpx2.AsyncClient(
                            transport=transport,
                            base_url="http://localhost",
                            headers={"Authorization": f"Bearer {world.token}"},
                        )
                    )
                )
            yield Pair(clients[0], clients[1], world.token)


def _call(label: str, params: dict[str, Any], name: str) -> tuple[str, str, str, Any, dict[str, str]]:
    """A ``tools/call`` case, its ``Mcp-Name`` header ``name``."""
    return label, "POST", "/mcp", _rpc("tools/call", params), _headers("tools/call", Mcp_Name=name)


CASES: list[tuple[str, str, str, Any, dict[str, str]]] = [
    ("discover", "POST", "/mcp", _rpc("server/discover"), _headers("server/discover")),
    (
        "discover with info",
        "POST",
        "/mcp",
        _rpc("server/discover", {"_meta": {**META, **INFO}}),
        _headers("server/discover"),
    ),
    ("tools/list", "POST", "/mcp", _rpc("tools/list"), _headers("tools/list")),
    ("tools/list cursor", "POST", "/mcp", _rpc("tools/list", {"cursor": "abc"}), _headers("tools/list")),
    ("tools/list string id", "POST", "/mcp", _rpc("tools/list", request_id="x-1"), _headers("tools/list")),
    ("ping", "POST", "/mcp", _rpc("ping"), _headers("ping")),
    ("initialize modern", "POST", "/mcp", _rpc("initialize"), _headers("initialize")),
    ("unknown method", "POST", "/mcp", _rpc("foo/bar"), _headers("foo/bar")),
    ("resources/list (the SDK's)", "POST", "/mcp", _rpc("resources/list"), _headers("resources/list")),
    (
        "notification",
        "POST",
        "/mcp",
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        _headers("notifications/initialized"),
    ),
    (
        "notification bad version",
        "POST",
        "/mcp",
        {"jsonrpc": "2.0", "method": "notifications/x"},
        _headers("notifications/x", MCP_Protocol_Version="2099-01-01"),
    ),
    ("no _meta", "POST", "/mcp", {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, _headers("tools/list")),
    (
        "_meta missing a key",
        "POST",
        "/mcp",
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/list",
            "params": {"_meta": {"io.modelcontextprotocol/protocolVersion": V}},
        },
        _headers("tools/list"),
    ),
    (
        "unsupported version",
        "POST",
        "/mcp",
        _rpc("tools/list", {"_meta": {**META, "io.modelcontextprotocol/protocolVersion": "2099-01-01"}}),
        _headers("tools/list", MCP_Protocol_Version="2099-01-01"),
    ),
    (
        "header/body version mismatch",
        "POST",
        "/mcp",
        _rpc("tools/list"),
        _headers("tools/list", MCP_Protocol_Version="2099-01-01"),
    ),
    ("method header mismatch", "POST", "/mcp", _rpc("tools/list"), _headers("ping")),
    (
        "name header mismatch",
        "POST",
        "/mcp",
        _rpc("tools/call", {"name": "patch.inspect", "arguments": {}}),
        _headers("tools/call", Mcp_Name="memory.query"),
    ),
    (
        "name header missing",
        "POST",
        "/mcp",
        _rpc("tools/call", {"name": "patch.inspect", "arguments": {}}),
        _headers("tools/call"),
    ),
    _call("tools/call ok", {"name": "patch.inspect", "arguments": {}}, "patch.inspect"),
    _call("tools/call underscore alias", {"name": "patch_inspect"}, "patch_inspect"),
    _call(
        "tools/call memory",
        {"name": "memory.query", "arguments": {"query": "sql", "limit": 5}},
        "memory.query",
    ),
    _call(
        "tools/call refused scope",
        {"name": "memory.query", "arguments": {"scope": "elsewhere"}},
        "memory.query",
    ),
    _call(
        "tools/call bad arguments", {"name": "memory.query", "arguments": {"limit": "many"}}, "memory.query"
    ),
    _call("tools/call forbidden tool", {"name": "proposal.create", "arguments": {}}, "proposal.create"),
    _call("tools/call unknown tool", {"name": "nope"}, "nope"),
    ("tools/call no name (the SDK's)", "POST", "/mcp", _rpc("tools/call"), _headers("tools/call")),
    _call(
        "tools/call list arguments (the SDK's)", {"name": "memory.query", "arguments": [1]}, "memory.query"
    ),
    ("duplicated method header", "POST", "/mcp", _rpc("ping"), {**_headers("ping"), "mcp-method": "ping"}),
    ("batch", "POST", "/mcp", [_rpc("ping")], _headers("ping")),
    ("bad jsonrpc", "POST", "/mcp", {"jsonrpc": "1.0", "id": 1, "method": "ping"}, _headers("ping")),
    ("null id", "POST", "/mcp", _rpc("ping", request_id=None), _headers("ping")),
    ("boolean id (the SDK's)", "POST", "/mcp", _rpc("ping", request_id=True), _headers("ping")),
    ("a response posted", "POST", "/mcp", {"jsonrpc": "2.0", "id": 1, "result": {}}, _headers("ping")),
    (
        "params a list",
        "POST",
        "/mcp",
        {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": [1]},
        _headers("ping"),
    ),
    ("scalar body", "POST", "/mcp", 5, _headers("ping")),
    ("GET", "GET", "/mcp", None, _headers("ping")),
    ("DELETE", "DELETE", "/mcp", None, _headers("ping")),
    ("HEAD", "HEAD", "/mcp", None, _headers("ping")),
    ("PUT", "PUT", "/mcp", _rpc("ping"), _headers("ping")),
    ("bad Host", "POST", "/mcp", _rpc("ping"), _headers("ping", Host="evil.example")),
    ("Host with a port", "POST", "/mcp", _rpc("tools/list"), _headers("tools/list", Host="localhost:8000")),
    ("bad Origin", "POST", "/mcp", _rpc("ping"), _headers("ping", Origin="http://evil.example")),
    ("loopback Origin", "POST", "/mcp", _rpc("tools/list"), _headers("tools/list", Origin="http://[::1]")),
    ("bad Content-Type", "POST", "/mcp", _rpc("ping"), _headers("ping", Content_Type="text/plain")),
    ("bad Accept", "POST", "/mcp", _rpc("ping"), _headers("ping", Accept="text/html")),
    ("wildcard Accept", "POST", "/mcp", _rpc("tools/list"), _headers("tools/list", Accept="*/*")),
    (
        "listen, no SSE",
        "POST",
        "/mcp",
        _rpc("subscriptions/listen"),
        _headers("subscriptions/listen", Accept=JSON),
    ),
    ("handshake era probe (the SDK's)", "POST", "/mcp", {}, {"Content-Type": "application/json"}),
    ("another path", "POST", "/elsewhere", {"x": 1}, _headers("ping")),
]


def _answer(response: httpx2.Response) -> dict[str, Any]:
    headers = {name: response.headers.get(name) for name in ("content-type", "allow", "www-authenticate")}
    try:
        body: Any = json.loads(response.text) if response.text else None
    except ValueError:
        body = response.text
    return {"status": response.status_code, "headers": headers, "body": body}


@pytest.mark.parametrize(
    ("name", "method", "path", "body", "headers"), CASES, ids=[case[0] for case in CASES]
)
async def test_the_same_request_gets_the_same_answer(
    pair: Pair, name: str, method: str, path: str, body: Any, headers: dict[str, str]
) -> None:
    content = b"" if body is None else json.dumps(body).encode()
    sdk = await pair.sdk.request(method, path, content=content, headers=headers)
    lean = await pair.lean.request(method, path, content=content, headers=headers)
    assert _answer(lean) == _answer(sdk)


@pytest.mark.parametrize(
    "content", [b"{bad", b"", b'{"a": 1', b"[" * 100_000, b"1" * 5000, "é".encode("latin-1")], ids=repr
)
async def test_a_body_that_is_not_json_gets_the_same_parse_error(pair: Pair, content: bytes) -> None:
    sdk = await pair.sdk.post("/mcp", content=content, headers=_headers("ping"))
    lean = await pair.lean.post("/mcp", content=content, headers=_headers("ping"))
    assert _answer(lean) == _answer(sdk)
    assert sdk.status_code == 400


@pytest.mark.parametrize(
    "authorization",
    [None, "Bearer not-a-token", "Basic abc", "Bearer a, Bearer b", "bearer"],
    ids=["none", "unknown", "other scheme", "two", "empty"],
)
@pytest.mark.parametrize("method", ["POST", "HEAD"])
@pytest.mark.parametrize("path", ["/mcp", "/elsewhere"])
async def test_a_refusal_is_the_same_401(
    pair: Pair, authorization: str | None, path: str, method: str
) -> None:
    headers = _headers("tools/list")
    if authorization is not None:
        headers["Authorization"] = authorization
    answers = []
    for client in (pair.sdk, pair.lean):
        request = client.build_request(
            "POST", path, content=json.dumps(_rpc("tools/list")).encode(), headers=headers
        )
        if authorization is None:
            del request.headers["Authorization"]
        response = await client.send(request)
        answers.append((_answer(response), response.headers.get("cache-control")))
    assert answers[0] == answers[1]
    assert answers[0][0]["status"] == 401


async def test_a_token_in_the_query_is_refused_alike(pair: Pair) -> None:
    url = f"/mcp?access_token={pair.token}"
    sdk = await pair.sdk.post(
        url, content=json.dumps(_rpc("tools/list")).encode(), headers=_headers("tools/list")
    )
    lean = await pair.lean.post(
        url, content=json.dumps(_rpc("tools/list")).encode(), headers=_headers("tools/list")
    )
    assert _answer(lean) == _answer(sdk)
    assert lean.status_code == 401


def test_the_protocol_versions_are_the_sdk_s() -> None:
    assert tuple(mcp_types.version.MODERN_PROTOCOL_VERSIONS) == MODERN_PROTOCOL_VERSIONS
    assert tuple(mcp_types.version.HANDSHAKE_PROTOCOL_VERSIONS) == HANDSHAKE_PROTOCOL_VERSIONS
    assert mcp_types.LATEST_PROTOCOL_VERSION in MODERN_PROTOCOL_VERSIONS


def test_no_tool_declares_an_mcp_param_header() -> None:
    """The lean server skips the SDK's ``Mcp-Param-*`` check: only an ``x-mcp-header`` schema arms it."""
    for spec in build_registry().specs():
        assert "x-mcp-header" not in json.dumps(spec.input_schema())


async def _handshake_session(client: httpx2.AsyncClient) -> list[Any]:
    """An earlier revision's session: initialize, initialized, tools/list, tools/call."""
    headers = {"Content-Type": JSON, "Accept": f"{JSON}, text/event-stream"}
    params = {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    }
    opened = await client.post(
        "/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}, headers=headers
    )
    session = {
        **headers,
        "Mcp-Session-Id": opened.headers["mcp-session-id"],
        "MCP-Protocol-Version": "2025-06-18",
    }
    await client.post("/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=session)
    listed = await client.post(
        "/mcp", json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, headers=session
    )
    call = {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "tools/call",
        "params": {"name": "patch.inspect", "arguments": {}},
    }
    called = await client.post("/mcp", json=call, headers=session)
    result = opened.json()["result"]
    return [result["protocolVersion"], result["serverInfo"], listed.json(), called.json()]


async def test_an_earlier_revision_s_session_is_served_alike(pair: Pair) -> None:
    """The lean server passes the handshake era to the SDK's app, with the caller's principal."""
    sdk, lean = await _handshake_session(pair.sdk), await _handshake_session(pair.lean)
    assert lean == sdk
    assert sdk[0] == "2025-06-18"
    assert sdk[2]["result"]["tools"]
    assert sdk[3]["result"]["isError"] is False
