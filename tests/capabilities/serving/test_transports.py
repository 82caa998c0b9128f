"""Streamable HTTP on TCP and on a Unix socket: serving, readiness, host checks, composition, shutdown."""

from __future__ import annotations

import os
import socket
import stat
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, StreamingResponse
from starlette.routing import Route

from capabilities.auth import issue_capability
from capabilities.mcp._registry import ToolRegistry
from capabilities.policy import MEMORY_ORACLE_TOOLS, OPERATOR_TOOLS
from capabilities.services import Services
from capabilities.serving._transports import (
    BoundAddress,
    build_asgi_app,
    build_launch_app,
    serve_asgi,
    serving,
)
from store import Store
from store.errors import Conflict, InvalidArgument
from tests.capabilities.http_helpers import body, http_client, insert_proposal, mcp_client

pytestmark = pytest.mark.anyio

MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}


def where(kind: str, tmp_path: Path) -> dict[str, Any]:
    return {"host": "127.0.0.1"} if kind == "tcp" else {"uds": str(tmp_path / "rt.sock")}


@pytest.mark.parametrize("kind", ["tcp", "uds"])
async def test_oracle_and_operator_see_their_own_tools_on_both_transports(
    kind: str, services: Services, store: Store, registry: ToolRegistry, tmp_path: Path
) -> None:
    task_id, proposal_id = insert_proposal(store)
    oracle = issue_capability(store, proposal_id=proposal_id, role="memory_oracle", actor="operator")
    operator = store.grants.mint_token(name="alice", actor="operator")
    store.memory.record(scope=task_id, kind="decision", title="in task", body_md="x", actor="op")
    store.memory.record(scope="T-other", kind="decision", title="elsewhere", body_md="x", actor="op")
    registered = set(registry.names())
    async with serving(build_asgi_app(services), **where(kind, tmp_path)) as address:
        async with mcp_client(address, oracle.token) as client:
            tools = {tool.name for tool in (await client.list_tools()).tools}
            assert tools == MEMORY_ORACLE_TOOLS & registered
            found = body(await client.call_tool("memory.query", {}))
            assert [entry["title"] for entry in found["entries"]] == ["in task"]
        async with mcp_client(address, operator.token) as client:
            tools = {tool.name for tool in (await client.list_tools()).tools}
            assert tools == OPERATOR_TOOLS & registered
            found = body(await client.call_tool("memory.query", {}))
            assert {entry["title"] for entry in found["entries"]} == {"in task", "elsewhere"}


@pytest.mark.parametrize("kind", ["tcp", "uds"])
async def test_host_and_origin_checks(kind: str, services: Services, store: Store, tmp_path: Path) -> None:
    operator = store.grants.mint_token(name="alice", actor="operator")
    async with (
        serving(build_asgi_app(services), **where(kind, tmp_path)) as address,
        http_client(address, operator.token) as client,
    ):
        ok = await client.post(address.mcp_url, json=PING, headers=MCP_HEADERS)
        assert ok.status_code != 421, ok.text  # localhost, with or without a port, is accepted
        rebinding = await client.post(
            address.mcp_url, json=PING, headers={**MCP_HEADERS, "Host": "evil.example"}
        )
        assert rebinding.status_code == 421
        foreign = await client.post(
            address.mcp_url, json=PING, headers={**MCP_HEADERS, "Origin": "http://evil.example"}
        )
        assert foreign.status_code == 403


async def test_unix_socket_mode_cleanup_and_stale_socket(services: Services, tmp_path: Path) -> None:
    path = tmp_path / "rt.sock"
    # A stale socket left by a dead server is replaced.
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(path))
    stale.close()
    async with serving(build_asgi_app(services), uds=path) as address:
        assert address.uds == str(path)
        info = os.lstat(path)
        assert stat.S_ISSOCK(info.st_mode)
        assert stat.S_IMODE(info.st_mode) == 0o600
        # A live socket is not stolen by a second server.
        with pytest.raises(Conflict, match="listening"):
            async with serving(build_asgi_app(services), uds=path):
                pass
    assert not path.exists()

    path.write_text("not a socket")
    with pytest.raises(Conflict, match="not a socket"):
        async with serving(build_asgi_app(services), uds=path):
            pass
    assert path.read_text() == "not a socket"
    with pytest.raises(InvalidArgument, match="longer than"):
        async with serving(build_asgi_app(services), uds=tmp_path / ("x" * 120)):
            pass


async def test_socket_mode_is_configurable(services: Services, tmp_path: Path) -> None:
    path = tmp_path / "shared.sock"
    async with serving(build_asgi_app(services), uds=path, uds_mode=0o666):
        assert stat.S_IMODE(os.lstat(path).st_mode) == 0o666


async def test_readiness_then_cancellation_shuts_down_with_a_session_open(
    services: Services, store: Store, tmp_path: Path
) -> None:
    operator = store.grants.mint_token(name="alice", actor="operator")
    path = tmp_path / "rt.sock"
    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            address: BoundAddress = await tg.start(partial(serve_asgi, build_asgi_app(services), uds=path))
            # Ready means ready: the first request after started() succeeds, no retry, no sleep.
            async with mcp_client(address, operator.token) as client:
                assert (await client.list_tools()).tools
                tg.cancel_scope.cancel()
    assert not path.exists()


async def test_extra_routes_and_lifespans_compose_with_mcp(services: Services, store: Store) -> None:
    started: list[str] = []

    @asynccontextmanager
    async def extra(app: Starlette) -> AsyncIterator[None]:
        started.append("up")
        yield
        started.append("down")

    async def page(request: Request) -> PlainTextResponse:
        return PlainTextResponse("console")

    operator = store.grants.mint_token(name="alice", actor="operator")
    app = build_asgi_app(services, extra_routes=[Route("/", page)], extra_lifespans=[extra])
    async with serving(app, host="127.0.0.1") as address:
        assert started == ["up"]
        async with http_client(address) as client:
            assert (await client.get(address.base_url + "/")).text == "console"
        async with mcp_client(address, operator.token) as session:
            assert (await session.list_tools()).tools
    assert started == ["up", "down"]


async def test_a_port_in_use_is_a_conflict(services: Services) -> None:
    async with serving(build_asgi_app(services), host="127.0.0.1") as address:
        assert address.port is not None and address.port > 0
        with pytest.raises(Conflict, match="cannot listen"):
            async with serving(build_asgi_app(services), host="127.0.0.1", port=address.port):
                pass


async def test_either_a_host_or_a_socket(services: Services, tmp_path: Path) -> None:
    with pytest.raises(InvalidArgument):
        await serve_asgi(build_asgi_app(services))
    with pytest.raises(InvalidArgument):
        await serve_asgi(build_asgi_app(services), host="127.0.0.1", uds=tmp_path / "s.sock")


async def test_a_launch_app_guards_its_extra_routes_too(
    services: Services, store: Store, tmp_path: Path
) -> None:
    async def gateway(request: Request) -> PlainTextResponse:
        principal = request.scope.get("roundtable.principal")
        return PlainTextResponse(getattr(principal, "name", "nobody"))

    _, proposal_id = insert_proposal(store)
    issued = issue_capability(store, proposal_id=proposal_id, role="memory_oracle", actor="operator")
    app = build_launch_app(services, issued.record.id, extra_routes=[Route("/gateway/v1/models", gateway)])
    async with serving(app, uds=tmp_path / "launch.sock") as address:
        async with http_client(address) as anonymous:
            assert (await anonymous.get("http://localhost/gateway/v1/models")).status_code == 401
        async with http_client(address, issued.token) as client:
            answer = await client.get("http://localhost/gateway/v1/models")
    assert answer.status_code == 200
    assert answer.text == "memory-oracle-1"


async def test_on_shutdown_lets_an_open_stream_end_promptly(services: Services) -> None:
    release = anyio.Event()

    async def stream(request: Request) -> StreamingResponse:
        async def body() -> AsyncIterator[bytes]:
            yield b"start\n"
            await release.wait()  # a live stream: it ends only when told to

        return StreamingResponse(body())

    app = build_asgi_app(services, extra_routes=[Route("/stream", stream)])
    chunks: list[bytes] = []
    # Without on_shutdown the open stream would hold the stop for the whole grace period (5 s).
    with anyio.fail_after(4):
        async with (
            anyio.create_task_group() as tg,
            serving(app, host="127.0.0.1", on_shutdown=release.set) as address,
        ):
            opened = anyio.Event()

            async def reader() -> None:
                async with (
                    http_client(address) as client,
                    client.stream("GET", address.base_url + "/stream") as response,
                ):
                    async for chunk in response.aiter_bytes():
                        chunks.append(chunk)
                        opened.set()

            tg.start_soon(reader)
            await opened.wait()
    assert b"".join(chunks) == b"start\n"
