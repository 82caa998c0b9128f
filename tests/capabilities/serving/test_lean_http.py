"""The lean launch socket server's HTTP: its limits, its framing, keep-alive and pipelining, its
stop; and the launch socket's refusals through the runner's lean client."""

from __future__ import annotations

import gc
import json
import os
import re
import stat
import subprocess
import sys
import tempfile
import warnings
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import anyio
import pytest

from capabilities.services import Services
from capabilities.serving import HttpLimits, LaunchSocketApp, serve_launch_socket
from capabilities.serving._lean_http import HttpRequest, Reply, lean_serving
from roles.channel import EXIT_NO_GRANT, ChannelError, ChannelPaths, open_channel, open_tool_channel
from store import Store
from tests.capabilities.oracle_helpers import OracleWorld, build_world

pytestmark = pytest.mark.anyio

V = "2026-07-28"
META = {"io.modelcontextprotocol/protocolVersion": V, "io.modelcontextprotocol/clientCapabilities": {}}


@pytest.fixture
def tmp() -> Iterator[Path]:
    """A short directory for sockets (``sun_path`` is short)."""
    with tempfile.TemporaryDirectory(prefix="rtl-", dir="/tmp") as name:
        yield Path(name)


def _post(body: bytes, token: str, *, method: str = "tools/list", extra: bytes = b"") -> bytes:
    return (
        b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
        b"Accept: application/json\r\nMCP-Protocol-Version: " + V.encode() + b"\r\n"
        b"Mcp-Method: "
        + method.encode()
        + b"\r\nAuthorization: Bearer "
        + token.encode()
        + b"\r\n"
        + extra
        + b"Content-Length: "
        + str(len(body)).encode()
        + b"\r\n\r\n"
        + body
    )


def _rpc(method: str = "tools/list", request_id: int = 1) -> bytes:
    return json.dumps(
        {"jsonrpc": "2.0", "id": request_id, "method": method, "params": {"_meta": META}}
    ).encode()


async def _exchange(path: Path, data: bytes, *, seconds: float = 10) -> bytes:
    """Send ``data``, then read until the server closes the connection."""
    received = bytearray()
    with anyio.fail_after(seconds):
        async with await anyio.connect_unix(path) as stream:
            await stream.send(data)
            try:
                while True:
                    received += await stream.receive()
            except (anyio.EndOfStream, anyio.BrokenResourceError):
                pass
    return bytes(received)


def _statuses(raw: bytes) -> list[int]:
    return [int(status) for status in re.findall(rb"HTTP/1\.1 (\d{3}) ", raw)]


@pytest.fixture
async def launch(store: Store, tmp: Path) -> AsyncIterator[tuple[Path, OracleWorld]]:
    """A lean launch socket for an oracle grant, with short limits."""
    world = build_world(store)
    limits = HttpLimits(max_body_bytes=4096, request_seconds=0.5, keepalive_seconds=0.5)
    path = tmp / "mcp.sock"
    async with serve_launch_socket(
        LaunchSocketApp(Services(store=store), world.grant_id), path, limits=limits
    ):
        yield path, world


async def test_the_socket_file_is_the_owner_s_alone(launch: tuple[Path, OracleWorld]) -> None:
    path, _ = launch
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_ISSOCK(os.stat(path).st_mode)


async def test_the_socket_file_is_removed_on_stop(store: Store, tmp: Path) -> None:
    world = build_world(store)
    async with serve_launch_socket(LaunchSocketApp(Services(store=store), world.grant_id), tmp / "s.sock"):
        assert (tmp / "s.sock").exists()
    assert not (tmp / "s.sock").exists()


async def test_keep_alive_and_pipelined_requests_are_answered_in_order(
    launch: tuple[Path, OracleWorld],
) -> None:
    path, world = launch
    raw = await _exchange(
        path, _post(_rpc(request_id=1), world.token) + _post(_rpc(request_id=2), world.token)
    )
    assert _statuses(raw) == [200, 200]
    assert raw.index(b'"id":1') < raw.index(b'"id":2')


async def test_an_idle_keep_alive_connection_is_closed(launch: tuple[Path, OracleWorld]) -> None:
    path, world = launch
    raw = await _exchange(path, _post(_rpc(), world.token), seconds=3)  # returns: the server closed it
    assert _statuses(raw) == [200]


async def test_an_oversized_body_is_refused_before_it_is_read(launch: tuple[Path, OracleWorld]) -> None:
    path, world = launch
    raw = await _exchange(path, _post(b" " * 5000, world.token))
    assert _statuses(raw) == [413]
    assert b'"error"' in raw


async def test_an_oversized_chunked_body_is_refused(launch: tuple[Path, OracleWorld]) -> None:
    path, world = launch
    head = _post(b"", world.token).replace(b"Content-Length: 0\r\n", b"Transfer-Encoding: chunked\r\n")
    chunk = b"1000\r\n" + b" " * 4096 + b"\r\n"
    raw = await _exchange(path, head + chunk * 2 + b"0\r\n\r\n")
    assert _statuses(raw) == [413]


async def test_a_chunked_body_is_read(launch: tuple[Path, OracleWorld]) -> None:
    path, world = launch
    body = _rpc()
    head = _post(b"", world.token).replace(b"Content-Length: 0\r\n", b"Transfer-Encoding: chunked\r\n")
    raw = await _exchange(path, head + f"{len(body):x}\r\n".encode() + body + b"\r\n0\r\n\r\n")
    assert _statuses(raw) == [200]
    assert b'"tools"' in raw


async def test_oversized_headers_are_refused(launch: tuple[Path, OracleWorld]) -> None:
    path, world = launch
    raw = await _exchange(path, _post(_rpc(), world.token, extra=b"X-Big: " + b"a" * 20000 + b"\r\n"))
    assert _statuses(raw) == [431]


@pytest.mark.parametrize(
    ("framing", "status"),
    [
        (b"Transfer-Encoding: chunked\r\nContent-Length: 5\r\n", 400),
        (b"Transfer-Encoding: gzip\r\n", 501),
        (b"Content-Length: 5\r\nContent-Length: 7\r\n", 400),
        (b"Content-Length: -1\r\n", 400),
    ],
    ids=["both", "gzip", "two lengths", "negative"],
)
async def test_framing_two_parsers_could_read_differently_is_refused(
    launch: tuple[Path, OracleWorld], framing: bytes, status: int
) -> None:
    path, world = launch
    head = _post(b"", world.token).replace(b"Content-Length: 0\r\n", framing)
    raw = await _exchange(path, head + b"hello")
    assert _statuses(raw) == [status]
    assert b"Traceback" not in raw


async def test_garbage_is_a_400_not_a_traceback(launch: tuple[Path, OracleWorld]) -> None:
    path, _ = launch
    raw = await _exchange(path, b"\x00\x01 not http\r\n\r\n")
    assert _statuses(raw) == [400]
    assert b'"error"' in raw


async def test_a_stalled_request_head_is_cut(launch: tuple[Path, OracleWorld]) -> None:
    path, _ = launch
    with anyio.fail_after(3):
        raw = await _exchange(path, b"POST /mcp HTTP/1.1\r\nHost: localhost\r\n")
    assert raw == b""


async def test_a_stalled_request_body_is_answered_408(launch: tuple[Path, OracleWorld]) -> None:
    path, world = launch
    with anyio.fail_after(3):
        raw = await _exchange(path, _post(_rpc(), world.token)[:-10])
    assert _statuses(raw) == [408]


async def test_the_sdk_client_and_the_lean_client_are_refused_a_wrong_token(
    launch: tuple[Path, OracleWorld], tmp: Path
) -> None:
    path, _ = launch
    (tmp / "token").write_text("not-the-token")
    paths = ChannelPaths(path, tmp / "token")
    for opening in (open_channel, open_tool_channel):
        with pytest.raises(ChannelError) as refused:
            async with opening(paths):
                pass
        assert refused.value.status == EXIT_NO_GRANT


async def test_another_grant_and_a_revoked_grant_are_refused(
    launch: tuple[Path, OracleWorld], store: Store, tmp: Path
) -> None:
    path, world = launch
    other = build_world(store, launch_id="L-other")
    (tmp / "token").write_text(other.token)
    with pytest.raises(ChannelError):
        async with open_tool_channel(ChannelPaths(path, tmp / "token")):
            pass
    (tmp / "token").write_text(world.token)
    async with open_tool_channel(ChannelPaths(path, tmp / "token")) as channel:
        assert channel.tools
        store.grants.revoke(world.grant_id, actor="test", reason="test")
        raw = await _exchange(path, _post(_rpc(), world.token))
        assert _statuses(raw) == [401]


async def test_stop_is_prompt_with_a_request_in_flight_and_leaves_nothing_open(tmp: Path) -> None:
    entered, finished = anyio.Event(), anyio.Event()

    async def hang(request: HttpRequest, reply: Reply) -> None:
        entered.set()
        try:
            await anyio.sleep_forever()
        finally:
            finished.set()

    outcome: list[bytes] = []
    with warnings.catch_warnings():
        warnings.simplefilter("error", ResourceWarning)
        async with anyio.create_task_group() as tg:
            async with lean_serving(hang, uds=tmp / "s.sock", limits=HttpLimits(grace_seconds=0.3)):

                async def ask() -> None:
                    outcome.append(await _exchange(tmp / "s.sock", b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"))

                idle = await anyio.connect_unix(tmp / "s.sock")  # an idle keep-alive connection
                tg.start_soon(ask)
                await entered.wait()
                started = anyio.current_time()
            elapsed = anyio.current_time() - started
            with pytest.raises((anyio.EndOfStream, anyio.BrokenResourceError)):
                await idle.receive()
            await idle.aclose()
        gc.collect()
    assert finished.is_set()
    assert 0.25 <= elapsed < 1.5  # the grace period, then cut; no polling tick
    assert outcome == [b""]


async def test_stop_lets_a_request_within_its_grace_finish(tmp: Path) -> None:
    entered, release = anyio.Event(), anyio.Event()

    async def slow(request: HttpRequest, reply: Reply) -> None:
        entered.set()
        await release.wait()
        await reply.send(200, [(b"content-type", b"text/plain")], b"done")

    outcome: list[bytes] = []
    async with (
        anyio.create_task_group() as tg,
        lean_serving(slow, uds=tmp / "s.sock", limits=HttpLimits(grace_seconds=5)),
    ):

        async def ask() -> None:
            outcome.append(await _exchange(tmp / "s.sock", b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"))

        tg.start_soon(ask)
        await entered.wait()
        tg.start_soon(_release_soon, release)
    assert _statuses(outcome[0]) == [200]
    assert outcome[0].endswith(b"done")


async def _release_soon(release: anyio.Event) -> None:
    await anyio.sleep(0.05)
    release.set()


def test_serving_a_launch_socket_imports_no_sdk_starlette_or_uvicorn(tmp: Path) -> None:
    script = tmp / "probe.py"
    script.write_text(_PROBE)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3])}
    result = subprocess.run(
        [sys.executable, str(script), str(tmp)], capture_output=True, text=True, env=env, timeout=120
    )
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout.strip().splitlines()[-1])
    assert answer["tools"] > 0
    assert answer["imported"] == []


_PROBE = """
import json, sys
from pathlib import Path
import anyio

import supervisor.launch  # noqa: F401
from capabilities.services import Services
from capabilities.serving import LaunchSocketApp
from supervisor.launch import launch_socket
from roles._mcp_http import McpHttpClient
from roles._unix_http import UnixHttpClient
from tests.capabilities.oracle_helpers import build_world
from store import init_project, open_store

HEAVY = ("mcp", "mcp_types", "starlette", "uvicorn", "sse_starlette", "httpx", "httpx2")


async def main(root: Path) -> None:
    paths, _ = init_project(root / "proj")
    store = open_store(paths)
    world = build_world(store)
    path = root / "mcp.sock"
    async with launch_socket(LaunchSocketApp(Services(store=store), world.grant_id), path):
        headers = {"Authorization": f"Bearer {world.token}"}
        async with UnixHttpClient(path, headers=headers, timeout=30) as http:
            client = McpHttpClient(http)
            tools = await client.list_tools()
            await client.call_tool("patch.inspect", {})
    store.close()
    print(json.dumps({"tools": len(tools), "imported": sorted(m for m in HEAVY if m in sys.modules)}))


anyio.run(main, Path(sys.argv[1]))
"""


async def test_a_failing_handler_is_a_json_500_and_the_server_goes_on(tmp: Path) -> None:
    calls: list[str] = []

    async def broken(request: HttpRequest, reply: Reply) -> None:
        calls.append(request.path)
        if request.path == "/half":
            await reply.start(200, [])
        raise RuntimeError("a bug")

    async with lean_serving(broken, uds=tmp / "s.sock"):
        raw = await _exchange(tmp / "s.sock", b"GET /boom HTTP/1.1\r\nHost: x\r\n\r\n")
        assert _statuses(raw) == [500]
        assert b'"internal"' in raw or b'"error"' in raw
        assert b"a bug" not in raw
        assert b"Traceback" not in raw
        half = await _exchange(tmp / "s.sock", b"GET /half HTTP/1.1\r\nHost: x\r\n\r\n")
        assert _statuses(half) == [200]  # started, then cut: the client sees a broken body
        again = await _exchange(tmp / "s.sock", b"GET /boom HTTP/1.1\r\nHost: x\r\n\r\n")
        assert _statuses(again) == [500]
    assert calls == ["/boom", "/half", "/boom"]
