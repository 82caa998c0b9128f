"""A bounded loopback load: MCP clients and HTTP clients at once on one Unix socket, zero errors.

The whole service app (``/mcp`` and ``/api/v1``) is served on a Unix socket; real ``mcp`` clients
(streamable HTTP over the socket) and ``httpx2`` clients of the HTTP API run together for a fixed
count of requests each. Every request must succeed; the figures are latency percentiles and the
process's resident memory before and after.
"""

from __future__ import annotations

import resource
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from capabilities.services import Services
from store import Store
from tests.capabilities.api_helpers import Api, running_api
from tests.capabilities.http_helpers import body, mcp_client
from tests.reliability.summary import Summary, percentiles, scaled

pytestmark = pytest.mark.anyio

MCP_CLIENTS = 6
HTTP_CLIENTS = 6
REQUESTS_EACH = 60
RSS_GROWTH_LIMIT_MB = 150


@pytest.fixture
def socket_dir() -> Iterator[Path]:
    """A short directory for the socket (pytest's tmp_path can be too long for one)."""
    path = Path(tempfile.mkdtemp(prefix="rtl-", dir="/tmp"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


async def test_mcp_and_http_clients_at_once_get_answers_with_zero_errors(
    services: Services, store: Store, reliability: Summary, socket_dir: Path
) -> None:
    for i in range(50):
        store.memory.record(scope="project", kind="fact", title=f"fact {i}", body_md="load " * 20, actor="op")
    latencies: dict[str, list[float]] = {"mcp": [], "http": []}
    errors: list[str] = []
    each = scaled(REQUESTS_EACH)

    async def mcp_worker(api: Api, n: int) -> None:
        async with mcp_client(api.address, api.token) as client:
            for i in range(each):
                started = time.perf_counter()
                try:
                    if i % 3 == 0:
                        answer = body(
                            await client.call_tool(
                                "memory.record",
                                {
                                    "scope": "project",
                                    "kind": "fact",
                                    "title": f"load {n}.{i}",
                                    "body_md": "b",
                                },
                            )
                        )
                    else:
                        answer = body(await client.call_tool("memory.query", {"query": "fact", "limit": 10}))
                    if "error" in answer:
                        errors.append(f"mcp: {answer}")
                except Exception as exc:  # counted, and the test fails on any
                    errors.append(f"mcp: {exc!r}")
                latencies["mcp"].append(time.perf_counter() - started)

    async def http_worker(api: Api, n: int) -> None:
        for i in range(each):
            started = time.perf_counter()
            try:
                if i % 3 == 0:
                    response = await api.client.post(
                        "/memories",
                        json={"scope": "project", "kind": "fact", "title": f"h {n}.{i}", "body_md": "b"},
                    )
                else:
                    response = await api.client.get("/memories", params={"limit": "20"})
                if response.status_code >= 400:
                    errors.append(f"http: {response.status_code} {response.text[:200]}")
            except Exception as exc:
                errors.append(f"http: {exc!r}")
            latencies["http"].append(time.perf_counter() - started)

    rss_before = _rss_mb()
    started = time.monotonic()
    async with running_api(services, uds=str(socket_dir / "rt.sock")) as api:
        with anyio.fail_after(300):
            async with anyio.create_task_group() as tg:
                for n in range(MCP_CLIENTS):
                    tg.start_soon(mcp_worker, api, n)
                for n in range(HTTP_CLIENTS):
                    tg.start_soon(http_worker, api, n)
    seconds = time.monotonic() - started
    rss_after = _rss_mb()
    total = len(latencies["mcp"]) + len(latencies["http"])
    load: dict[str, Any] = {
        "requests": total,
        "concurrency": MCP_CLIENTS + HTTP_CLIENTS,
        "seconds": round(seconds, 2),
        "requests_per_second": round(total / seconds, 1),
        "errors": len(errors),
        "mcp": {"clients": MCP_CLIENTS, "requests": len(latencies["mcp"]), **percentiles(latencies["mcp"])},
        "http": {
            "clients": HTTP_CLIENTS,
            "requests": len(latencies["http"]),
            **percentiles(latencies["http"]),
        },
        "all": percentiles(latencies["mcp"] + latencies["http"]),
        "rss_mb_before": round(rss_before, 1),
        "rss_mb_after": round(rss_after, 1),
    }
    reliability.load = load
    assert not errors, errors[:5]
    assert total == (MCP_CLIENTS + HTTP_CLIENTS) * each
    assert rss_after - rss_before < RSS_GROWTH_LIMIT_MB, load
