"""Stopping a server: open connections are closed, requests under way finish or are cut at the grace
period, and nothing is left for the garbage collector (no unclosed socket or transport)."""

from __future__ import annotations

import gc
import warnings
from collections.abc import Iterator
from contextlib import AsyncExitStack, contextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from capabilities.services import Services
from capabilities.serving import _transports
from capabilities.serving._transports import build_asgi_app, serving

pytestmark = pytest.mark.anyio

REQUEST = b"GET /page HTTP/1.1\r\nHost: localhost\r\n\r\n"


@contextmanager
def no_resource_warning() -> Iterator[None]:
    """Fail if collecting garbage at the end of the block finds an unclosed socket or transport."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
        gc.collect()
    leaked = [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)]
    assert not leaked


async def read_response(stream: anyio.abc.ByteStream) -> bytes:
    """One whole response (headers and a ``Content-Length`` body) from ``stream``."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += await stream.receive()
    head, _, rest = data.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length")
    )
    while len(rest) < length:
        rest += await stream.receive()
    return head + b"\r\n\r\n" + rest


async def closed_by_peer(stream: anyio.abc.ByteStream) -> bool:
    """Whether the other end has closed ``stream`` (its next read is the end of the stream)."""
    try:
        await stream.receive()
    except (anyio.EndOfStream, anyio.BrokenResourceError):
        return True
    return False


def page_app(
    services: Services, release: anyio.Event | None = None, entered: anyio.Event | None = None
) -> Any:
    """The MCP app with an unguarded ``/page`` that answers once ``release`` is set, if given."""

    async def page(request: Request) -> PlainTextResponse:
        if entered is not None:
            entered.set()
        if release is not None:
            await release.wait()
        return PlainTextResponse("page")

    return build_asgi_app(services, extra_routes=[Route("/page", page)])


async def test_a_stop_closes_an_idle_keep_alive_connection(services: Services, tmp_path: Path) -> None:
    path = tmp_path / "rt.sock"
    with no_resource_warning(), anyio.fail_after(10):
        async with AsyncExitStack() as stack:
            await stack.enter_async_context(serving(page_app(services), uds=path))
            client = await anyio.connect_unix(path)
            await client.send(REQUEST)
            assert (await read_response(client)).endswith(b"page")
            await stack.aclose()  # the stop, with the client's keep-alive connection open
            assert await closed_by_peer(client)
            await client.aclose()
    assert not path.exists()


async def test_a_request_under_way_at_the_stop_is_answered_then_its_connection_closed(
    services: Services, tmp_path: Path
) -> None:
    path = tmp_path / "rt.sock"
    release, entered, stopped = anyio.Event(), anyio.Event(), anyio.Event()
    answers: list[bytes] = []
    with no_resource_warning(), anyio.fail_after(10):

        async def read() -> None:
            answers.append(await read_response(client))
            answers.append(b"closed" if await closed_by_peer(client) else b"open")

        async def release_once_the_stop_waits() -> None:
            await anyio.wait_all_tasks_blocked()
            assert not stopped.is_set()  # the stop waits for the answer under way
            release.set()

        async with anyio.create_task_group() as tg:
            stack = AsyncExitStack()  # entered in the task group, and left before it
            await stack.enter_async_context(serving(page_app(services, release, entered), uds=path))
            client = await anyio.connect_unix(path)
            await client.send(REQUEST)
            await entered.wait()
            tg.start_soon(read)
            tg.start_soon(release_once_the_stop_waits)
            await stack.aclose()
            stopped.set()
        await client.aclose()
    answer, after = answers
    assert answer.startswith(b"HTTP/1.1 200") and answer.endswith(b"page")
    assert after == b"closed"


async def test_past_the_grace_period_a_request_is_cut_and_its_connection_aborted(
    services: Services, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_transports, "_GRACE_SECONDS", 1.0)
    path = tmp_path / "rt.sock"
    never, entered = anyio.Event(), anyio.Event()
    with no_resource_warning(), anyio.fail_after(10):
        stack = AsyncExitStack()
        await stack.enter_async_context(serving(page_app(services, never, entered), uds=path))
        client = await anyio.connect_unix(path)
        await client.send(REQUEST)
        await entered.wait()
        await stack.aclose()  # returns once the grace period is over and the connection is gone
        assert await closed_by_peer(client)
        await client.aclose()
    assert not never.is_set()
    assert not path.exists()
