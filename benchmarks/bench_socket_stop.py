"""How long a launch's socket server takes to stop, beside a plain socket server, in the same run.

Each repetition, alternately:

* **plain socket server** (the baseline): an asyncio server bound on a Unix socket, one client
  that connects and is answered one line, then the server closed (``close`` and ``wait_closed``);
  timed from bind to closed;
* **launch socket, connection closed**: the lean launch socket server
  (:func:`~capabilities.serving.serve_launch_socket` of a :class:`~capabilities.serving.LaunchSocketApp`)
  on a Unix socket, one MCP ``tools/list`` with the launch's token by the runner's own client over a
  connection closed before the stop (a runner that has exited), then the stop: the end of the
  ``async with`` block to its return;
* **launch socket, connection open**: the same with the client's keep-alive connection still open
  when the stop begins (a runner still connected);
* the same two with the SDK's launch app under uvicorn (:func:`~capabilities.serving.serving` of
  :func:`~capabilities.serving.build_launch_app`), what served the launch socket before the lean
  server, for comparison in the same run.

Prints the median and p95 of each, and each launch stop as a ratio to the plain server's whole
bind-to-closed cycle. Usage: ``python -m benchmarks.bench_socket_stop [--repeat N]``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path

import anyio

from benchmarks._timing import Timing
from capabilities.auth import issue_capability
from capabilities.services import Services
from capabilities.serving import LaunchSocketApp, build_launch_app, serve_launch_socket, serving
from roles._mcp_http import McpHttpClient
from roles._unix_http import UnixHttpClient
from store import Store, init_project, open_store
from supervisor.logging import configure_logging

PLAIN = "plain socket server: bind, one answer, closed"
CLOSED = "launch socket: stop, its connection closed"
OPEN = "launch socket: stop, a keep-alive connection open"
SDK_CLOSED = "before (the SDK app under uvicorn): stop, its connection closed"
SDK_OPEN = "before (the SDK app under uvicorn): stop, a keep-alive connection open"


def _grant(store: Store) -> tuple[str, str]:
    """A proposal and a memory-oracle capability on it: the grant id and its token."""
    task = store.tasks.create(title="Benchmark task", actor="bench")
    diff = "--- a/x.txt\n+++ b/x.txt\n@@ -1 +1 @@\n-a\n+b\n"
    proposal, _ = store.proposals.create(
        task_id=task.id, agent_id="implementer-1", title="Benchmark", patch=diff, actor="bench"
    )
    issued = issue_capability(store, proposal_id=proposal["id"], role="memory_oracle", actor="bench")
    return issued.record.id, issued.token


async def _plain(path: str) -> float:
    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readline()
        writer.write(b"pong\n")
        await writer.drain()
        writer.close()
        await writer.wait_closed()

    start = time.perf_counter()
    server = await asyncio.start_unix_server(answer, path=path)
    reader, writer = await asyncio.open_unix_connection(path)
    writer.write(b"ping\n")
    await writer.drain()
    assert await reader.readline() == b"pong\n"
    writer.close()
    await writer.wait_closed()
    server.close()
    await server.wait_closed()
    taken = time.perf_counter() - start
    os.unlink(path)
    return taken


async def _launch_stop(
    store: Store, grant_id: str, token: str, path: str, *, keep_open: bool, sdk: bool = False
) -> float:
    services = Services(store=store)
    async with UnixHttpClient(Path(path), headers={"Authorization": f"Bearer {token}"}, timeout=30) as http:
        server = AsyncExitStack()
        if sdk:
            await server.enter_async_context(serving(build_launch_app(services, grant_id), uds=path))
        else:
            await server.enter_async_context(serve_launch_socket(LaunchSocketApp(services, grant_id), path))
        assert await McpHttpClient(http).list_tools()  # the runner's own client
        if not keep_open:
            await http.aclose()
        start = time.perf_counter()
        await server.aclose()
        return time.perf_counter() - start


async def _measure(store: Store, tmp: Path, repeat: int) -> dict[str, list[float]]:
    grant_id, token = _grant(store)
    samples: dict[str, list[float]] = {label: [] for label in (PLAIN, CLOSED, OPEN, SDK_CLOSED, SDK_OPEN)}
    for index in range(repeat + 2):  # the first two warm up imports and caches
        plain = await _plain(str(tmp / "plain.sock"))
        closed = await _launch_stop(store, grant_id, token, str(tmp / "launch.sock"), keep_open=False)
        kept = await _launch_stop(store, grant_id, token, str(tmp / "launch.sock"), keep_open=True)
        sdk_closed = await _launch_stop(
            store, grant_id, token, str(tmp / "sdk.sock"), keep_open=False, sdk=True
        )
        sdk_kept = await _launch_stop(store, grant_id, token, str(tmp / "sdk.sock"), keep_open=True, sdk=True)
        if index >= 2:
            for label, taken in ((PLAIN, plain), (CLOSED, closed), (OPEN, kept)):
                samples[label].append(taken)
            samples[SDK_CLOSED].append(sdk_closed)
            samples[SDK_OPEN].append(sdk_kept)
    return samples


def main() -> None:
    """Run the benchmark and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=20, help="repetitions of each")
    args = parser.parse_args()
    configure_logging(verbose=False)
    with tempfile.TemporaryDirectory(prefix="rt-bench-") as tmp:
        paths, _ = init_project(Path(tmp) / "proj")
        store = open_store(paths)
        try:
            samples = anyio.run(_measure, store, Path(tmp), args.repeat)
        finally:
            store.close()
    baseline = Timing(PLAIN, samples[PLAIN])
    print(f"stopping the launch socket's server, {args.repeat} repetitions (baseline: {PLAIN})")
    print(baseline.line())
    for label in (CLOSED, OPEN, SDK_CLOSED, SDK_OPEN):
        print(Timing(label, samples[label]).line(baseline))


if __name__ == "__main__":
    main()
