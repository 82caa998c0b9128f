"""The runner without an event loop (roles._blocking): the same answers on a real launch socket, the
same HTTP framing, and a judge run that never imports asyncio."""

from __future__ import annotations

import json
import sys
from collections.abc import Generator
from pathlib import Path
from typing import Any

import anyio
import pytest

from roles._blocking import BlockingUnixHttpClient, run_blocking
from roles._unix_http import HttpError
from roles.channel import EXIT_NO_GRANT, ChannelError, ChannelPaths, open_tool_channel
from tests.roles.test_mcp_http import _raw_server

pytestmark = pytest.mark.anyio


class _Suspend:
    def __await__(self) -> Generator[None, None, None]:
        yield


def test_a_coroutine_that_never_suspends_runs_to_its_value() -> None:
    async def answer() -> int:
        async def inner() -> int:
            return 41

        return await inner() + 1

    assert run_blocking(answer()) == 42


def test_a_coroutine_that_suspends_is_refused_not_left_half_run() -> None:
    async def waits() -> None:
        await _Suspend()

    with pytest.raises(RuntimeError, match="suspended"):
        run_blocking(waits())


async def _both(paths: ChannelPaths, tool: str, arguments: dict[str, Any]) -> tuple[Any, Any]:
    """The call's answer through the event-loop client, and through the blocking one (on a worker
    thread: this thread's loop serves the socket)."""

    async def call(blocking: bool) -> Any:
        async with open_tool_channel(paths, blocking=blocking) as channel:
            result = await channel.client.call_tool(tool, arguments)
            return [t.name for t in channel.tools], result

    looped = await call(False)
    blocked = await anyio.to_thread.run_sync(lambda: run_blocking(call(True)))
    return looped, blocked


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("task.history", {}),
        ("memory.query", {"query": "sql", "limit": 5}),
        ("memory.query", {"scope": "elsewhere"}),  # refused: outside the grant's scopes
    ],
)
async def test_the_blocking_client_gets_the_same_answers(
    paths: ChannelPaths, tool: str, arguments: dict[str, Any]
) -> None:
    (tools, looped), (blocked_tools, blocked) = await _both(paths, tool, arguments)
    assert blocked_tools == tools and tools
    assert (blocked.is_error, blocked.structured_content) == (looped.is_error, looped.structured_content)
    assert [(c.type, c.text) for c in blocked.content] == [(c.type, c.text) for c in looped.content]


async def test_a_refused_token_is_no_grant_without_a_loop_too(paths: ChannelPaths, tmp_path: Path) -> None:
    wrong = tmp_path / "token"
    wrong.write_text("rt_cap_not-a-token")

    async def connect() -> None:
        async with open_tool_channel(ChannelPaths(paths.socket, wrong), blocking=True):
            pass

    with pytest.raises(ChannelError) as refused:
        await anyio.to_thread.run_sync(lambda: run_blocking(connect()))
    assert refused.value.status == EXIT_NO_GRANT


async def test_the_blocking_client_frames_http_as_the_other_does(tmp_path: Path) -> None:
    socket = tmp_path / "s.sock"
    # "Connection: close": the client must open a new connection for the next request (without it,
    # whether its next send reaches the closing server first is a race between two threads).
    chunked = (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
        b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"
    )
    cut = b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort"
    seen: list[bytes] = []

    async def requests() -> tuple[bytes, str]:
        async with BlockingUnixHttpClient(socket, headers={}, timeout=10) as http:
            first = await http.post("/mcp", b"{}", {})
            try:
                await http.post("/mcp", b"[]", {})  # a new connection, its answer cut short
            except HttpError as exc:
                return first.content, str(exc)
        return first.content, ""

    async with anyio.create_task_group() as group:
        group.start_soon(_raw_server, socket, [chunked, cut], seen)
        await anyio.wait_all_tasks_blocked()
        content, error = await anyio.to_thread.run_sync(lambda: run_blocking(requests()))
        group.cancel_scope.cancel()  # a server still waiting for a connection never holds the test
    assert content == b"hello world"
    assert "ended inside a response body" in error
    assert len(seen) == 2  # the cut request was not sent again


async def test_a_judge_run_never_imports_asyncio_ssl_nor_shutil(paths: ChannelPaths) -> None:
    """None is of use to a run over the launch socket, and each costs the container's start-up
    (asyncio and anyio's backend ~90 ms, ssl ~15 ms, shutil ~8 ms): a TLS channel imports ssl when
    it opens, argparse's help imports shutil when printed."""
    probe = (
        "import json, sys\n"
        "from roles import runner\n"
        # The role image finds its version by listing site-packages (roles.runner._installed_version);
        # a checkout has no such listing and falls back to importlib.metadata, which imports shutil.
        "runner._installed_version = lambda: '0.0.0'\n"
        f"status = runner.main(['--socket', {str(paths.socket)!r}, '--token-file', {str(paths.token_file)!r},"
        " '--provider', 'judge'])\n"
        "print(json.dumps({'status': status, 'asyncio': 'asyncio' in sys.modules,"
        " 'anyio_backend': 'anyio._backends._asyncio' in sys.modules, 'ssl': 'ssl' in sys.modules,"
        " 'shutil': 'shutil' in sys.modules}))\n"
    )
    done = await anyio.run_process([sys.executable, "-c", probe], check=False)
    lines = done.stdout.decode().strip().splitlines()
    report, imported = json.loads(lines[-2]), json.loads(lines[-1])
    expected = {"status": 0, "asyncio": False, "anyio_backend": False, "ssl": False, "shutil": False}
    assert imported == expected, done.stderr.decode()
    assert "memory.query" in report["tools"]
