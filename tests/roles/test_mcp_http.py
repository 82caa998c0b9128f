"""The runner's lean MCP client (roles._mcp_http over roles._unix_http) against the SDK's client on a
real launch socket: the same tools, the same answers, the same refusals; and the HTTP framing it
must read (chunked bodies, event streams, a keep-alive connection the server closed)."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import mcp_types
import pytest
from anyio.abc import SocketStream

from roles._mcp_http import PROTOCOL_VERSION, ProtocolError, _message
from roles._unix_http import HttpError, UnixHttpClient
from roles.channel import EXIT_NO_GRANT, ChannelError, ChannelPaths, open_channel, open_tool_channel
from roles.tools import McpToolCaller, ToolCallError

pytestmark = pytest.mark.anyio


def test_the_protocol_version_is_the_sdk_s() -> None:
    assert PROTOCOL_VERSION == mcp_types.LATEST_PROTOCOL_VERSION


async def test_the_tool_list_is_the_sdk_client_s(paths: ChannelPaths) -> None:
    async with open_channel(paths) as sdk:
        expected = [
            (t.name, t.description, dict(t.input_schema)) for t in (await sdk.client.list_tools()).tools
        ]
    async with open_tool_channel(paths) as lean:
        assert [(t.name, t.description, t.input_schema) for t in lean.tools] == expected
    assert expected


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("patch.inspect", {}),
        ("task.history", {}),
        ("memory.query", {"query": "sql", "limit": 5}),
        ("memory.query", {"scope": "elsewhere"}),  # refused: outside the grant's scopes
        ("memory.query", {"limit": "many"}),  # refused: not valid arguments
    ],
)
async def test_a_call_s_answer_is_the_sdk_client_s(
    paths: ChannelPaths, tool: str, arguments: dict[str, object]
) -> None:
    async with open_channel(paths) as sdk:
        expected = await sdk.client.call_tool(tool, arguments)
    async with open_tool_channel(paths) as lean:
        result = await lean.client.call_tool(tool, arguments)
    assert result.is_error == expected.is_error
    assert result.structured_content == expected.structured_content
    assert [(c.type, c.text) for c in result.content] == [
        (c.type, getattr(c, "text", None)) for c in expected.content
    ]


async def test_a_refusal_reaches_the_provider_as_a_tool_call_error(paths: ChannelPaths) -> None:
    async with open_tool_channel(paths) as lean:
        with pytest.raises(ToolCallError) as refused:
            await McpToolCaller(lean.client).call("memory.query", {"scope": "elsewhere"})
        assert refused.value.code == "forbidden"
        with pytest.raises(ProtocolError, match="no/such-method"):  # a JSON-RPC error
            await lean.client.request("no/such-method", {})


async def test_a_refused_token_is_no_grant(paths: ChannelPaths, tmp_path: Path) -> None:
    wrong = tmp_path / "token"
    wrong.write_text("rt_cap_not-a-token")
    with pytest.raises(ChannelError) as refused:
        async with open_tool_channel(ChannelPaths(paths.socket, wrong)):
            pass
    assert refused.value.status == EXIT_NO_GRANT


def test_an_event_stream_answer_is_read_by_its_request_id() -> None:
    other = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {}}
    answer = {"jsonrpc": "2.0", "id": 7, "result": {"tools": []}}
    stream = f"event: message\ndata: {json.dumps(other)}\n\nevent: message\ndata: {json.dumps(answer)}\n\n"
    assert _message("text/event-stream", stream, 7) == answer
    with pytest.raises(ProtocolError):
        _message("text/event-stream", stream, 8)


# -- HTTP framing, against a raw server ----------------------------------------------------------


async def _raw_server(socket: Path, answers: list[bytes], seen: list[bytes]) -> None:
    """Serve one connection per answer: read a request, send the answer, close."""
    listener = await anyio.create_unix_listener(socket)

    async def handle(stream: SocketStream) -> None:
        async with stream:
            seen.append(await stream.receive())
            await stream.send(answers.pop(0))

    async with listener:
        while answers:
            await handle(await listener.accept())


async def test_chunked_bodies_and_a_closed_keep_alive_connection(tmp_path: Path) -> None:
    socket = tmp_path / "s.sock"
    chunked = (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6;x=y\r\n world\r\n0\r\n\r\n"
    )
    plain = b"HTTP/1.1 201 Created\r\nContent-Length: 2\r\nX-Y: z\r\n\r\nok"
    seen: list[bytes] = []
    async with anyio.create_task_group() as group:
        group.start_soon(_raw_server, socket, [chunked, plain], seen)
        await anyio.wait_all_tasks_blocked()
        async with UnixHttpClient(socket, headers={"Authorization": "Bearer t"}, timeout=10) as http:
            first = await http.post("/mcp", b"{}", {"Content-Type": "application/json"})
            # The server closed that keep-alive connection: the next request goes on a new one.
            second = await http.post("/mcp", b"[]", {})
    assert (first.status_code, first.content) == (200, b"hello world")
    assert (second.status_code, second.content, second.headers["x-y"]) == (201, b"ok", "z")
    assert seen[0].startswith(b"POST /mcp HTTP/1.1\r\n") and seen[0].endswith(b"\r\n\r\n{}")
    assert b"Authorization: Bearer t\r\n" in seen[0] and b"Content-Length: 2\r\n" in seen[0]


async def test_an_answer_cut_short_is_an_error_not_a_retry(tmp_path: Path) -> None:
    socket = tmp_path / "s.sock"
    seen: list[bytes] = []
    cut = b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort"
    async with anyio.create_task_group() as group:
        group.start_soon(_raw_server, socket, [cut], seen)
        await anyio.wait_all_tasks_blocked()
        async with UnixHttpClient(socket, headers={}, timeout=10) as http:
            with pytest.raises(HttpError):
                await http.post("/mcp", b"{}", {})
    assert len(seen) == 1


async def test_a_request_that_reached_the_server_is_never_sent_twice(tmp_path: Path) -> None:
    """A tool call is not idempotent: the server read the second request and closed without an
    answer; the client reports it and does not send it again (one connection, two requests)."""
    socket = tmp_path / "s.sock"
    seen: list[bytes] = []
    connections: list[int] = []

    async def server() -> None:
        listener = await anyio.create_unix_listener(socket)
        async with listener:
            while True:
                stream = await listener.accept()
                connections.append(1)
                async with stream:
                    seen.append(await stream.receive())
                    await stream.send(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                    seen.append(await stream.receive())  # read, then gone without a word

    async with anyio.create_task_group() as group:
        group.start_soon(server)
        await anyio.wait_all_tasks_blocked()
        async with UnixHttpClient(socket, headers={}, timeout=10) as http:
            assert (await http.post("/mcp", b"{}", {})).content == b"ok"
            with pytest.raises(HttpError):
                await http.post("/mcp", b'{"call": 1}', {})
        group.cancel_scope.cancel()
    assert len(seen) == 2 and seen[1].endswith(b'{"call": 1}') and len(connections) == 1


@pytest.mark.parametrize(
    "answer",
    [
        b"HTTP/1.1 200 OK\r\nContent-Length: -5\r\n\r\nhello",
        b"HTTP/1.1 200 OK\r\nContent-Length: +5\r\n\r\nhello",
        b"HTTP/1.1 200 OK\r\nContent-Length: 1_0\r\n\r\nhello",
        b"HTTP/1.1 200 OK\r\nContent-Length: five\r\n\r\nhello",
        b"HTTP/1.1 200 OK\r\nContent-Length: 99999999999\r\n\r\nhello",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n-1\r\nx\r\n0\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0x5\r\nhello\r\n0\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nFFFFFFFF\r\nhello\r\n0\r\n\r\n",
        b"HTTP/1.1 \xc2\xb2\xc2\xb2\xc2\xb2 OK\r\nContent-Length: 0\r\n\r\n",
    ],
)
async def test_a_hostile_framing_is_an_http_error(tmp_path: Path, answer: bytes) -> None:
    socket = tmp_path / "s.sock"
    seen: list[bytes] = []
    async with anyio.create_task_group() as group:
        group.start_soon(_raw_server, socket, [answer], seen)
        await anyio.wait_all_tasks_blocked()
        async with UnixHttpClient(socket, headers={}, timeout=10) as http:
            with pytest.raises(HttpError):
                await http.post("/mcp", b"{}", {})
