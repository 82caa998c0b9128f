"""The HTTP API under concurrent loopback load: requests per second and latency percentiles.

Seeds a project (a proposal with a long, enriched timeline; ``--memories`` memory entries), starts
the real service with ``roundtable serve --port 0`` in its own process, and drives it from this
process with ``--concurrency`` keep-alive clients for ``--seconds`` per route:

- ``GET /favicon.ico``: a static no-op route of the same server (204, no auth, no database): the
  ceiling of this server and this load generator on this machine;
- ``GET /api/v1/events?after=<last>``: bearer authentication plus one indexed query that finds
  nothing: the floor of any authenticated API route;
- ``GET /api/v1/proposals/{id}/timeline`` and ``GET /api/v1/memories`` (first page of 50, a deep
  page through the cursor, a ``q`` search that fills a page early, and one that matches nothing
  and so reads every entry: a literal substring search has no index to use).

Usage: ``python -m benchmarks.bench_http [--memories N] [--concurrency C] [--seconds S]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx2

from benchmarks._timing import percentile
from store import Store, append_event, init_project, open_store

_WORDS = "sql builder cache index schema token retry queue cursor deploy rollback flag latency vote".split()
_DIFF = "diff --git a/f.txt b/f.txt\n--- a/f.txt\n+++ b/f.txt\n@@ -1 +1 @@\n-{old}\n+{new}\n"


@dataclass(frozen=True)
class Result:
    """One route under load."""

    label: str
    requests: int
    seconds: float
    latencies: list[float]
    errors: int

    def line(self, baseline: Result | None) -> str:
        """``label  req/s  p50  p95  p99  (share of the no-op rate)``."""
        rate = self.requests / self.seconds
        text = (
            f"{self.label:<44} {rate:8.0f} req/s   p50 {percentile(self.latencies, 50) * 1000:7.2f} ms"
            f"   p95 {percentile(self.latencies, 95) * 1000:7.2f} ms"
            f"   p99 {percentile(self.latencies, 99) * 1000:7.2f} ms"
        )
        if baseline is not None:
            text += f"   {rate / (baseline.requests / baseline.seconds) * 100:5.1f}% of no-op"
        if self.errors:
            text += f"   ERRORS {self.errors}"
        return text


def _seed(store: Store, memories: int, votes: int, rng: random.Random) -> tuple[str, str]:
    """A proposal with versions, votes, warnings and notes; ``memories`` entries. Returns (P, cursor)."""
    task = store.tasks.create(title="Benchmark task", actor="bench")
    proposal, _ = store.proposals.create(
        task_id=task.id,
        agent_id="implementer-1",
        title="Bench",
        patch=_DIFF.format(old="a", new="b"),
        actor="bench",
    )
    pid = proposal["id"]
    cited = [
        store.memory.record(
            scope="project", kind="decision", title=f"Rule {n}", body_md="x", actor="bench"
        ).id
        for n in range(5)
    ]
    store.reviews.request_review(proposal_id=pid, actor="bench")
    for n in range(votes):
        if n and n % 10 == 0:
            store.proposals.attach_patch(
                proposal_id=pid, patch=_DIFF.format(old="a", new=f"b{n}"), actor="bench"
            )
        store.reviews.cast(
            proposal_id=pid,
            agent_id=f"reviewer-{n % 2 + 1}",
            vote="abstain",
            reason_md=f"round {n}",
            actor="bench",
        )

    def notes(conn: sqlite3.Connection) -> None:
        for n in range(40):
            append_event(
                conn,
                "memory.oracle_warning" if n % 4 == 0 else "role.started",
                actor="memory-oracle-1",
                task_id=task.id,
                proposal_id=pid,
                payload={
                    "message_md": f"note {n}",
                    "cited_memory_ids": cited[: n % 5 + 1],
                    "patch_version": 1,
                },
            )

    store.db.write(notes)
    batch = [
        {
            "scope": rng.choice(["project", task.id]),
            "kind": rng.choice(["decision", "constraint", "fact"]),
            "title": " ".join(rng.choices(_WORDS, k=4)).capitalize(),
            "body_md": " ".join(rng.choices(_WORDS, k=80)),
        }
        for _ in range(memories)
    ]
    for start in range(0, len(batch), 1000):
        store.memory.record_many(batch[start : start + 1000], actor="bench")
    deep = store.memory_admin.list(limit=200)
    for _ in range(max(0, memories // 400)):
        if deep["next_cursor"] is None:
            break
        deep = store.memory_admin.list(limit=200, cursor=deep["next_cursor"])
    return pid, deep["next_cursor"] or ""


@contextmanager
def _server(root: Path) -> Iterator[str]:
    """``roundtable serve`` on a free loopback port, in its own process; yields its base URL."""
    process = subprocess.Popen(
        [sys.executable, "-m", "supervisor", "serve", "--root", str(root), "--port", "0", "--json"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        for line in process.stderr:
            if '"serve.ready"' in line:
                yield str(json.loads(line)["url"])
                break
        else:
            raise RuntimeError("roundtable serve exited before it was ready")
    finally:
        process.terminate()
        process.wait(timeout=30)


async def _load(url: str, token: str, label: str, concurrency: int, seconds: float) -> Result:
    latencies: list[float] = []
    errors = 0
    limits = httpx2.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {token}"}, limits=limits, timeout=30
    ) as client:
        await asyncio.gather(*(client.get(url) for _ in range(concurrency)))  # open the connections
        deadline = time.perf_counter() + seconds

        async def worker() -> None:
            nonlocal errors
            while time.perf_counter() < deadline:
                start = time.perf_counter()
                response = await client.get(url)
                latencies.append(time.perf_counter() - start)
                if response.status_code >= 300:
                    errors += 1

        began = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        elapsed = time.perf_counter() - began
    return Result(label, len(latencies), elapsed, latencies, errors)


def main() -> None:
    """Run the benchmark and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--memories", type=int, default=20_000)
    parser.add_argument("--votes", type=int, default=60, help="votes cast on the proposal (a version per 10)")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=5.0)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="rt-bench-http-") as tmp:
        paths, _ = init_project(Path(tmp))
        store = open_store(paths)
        try:
            started = time.perf_counter()
            pid, deep_cursor = _seed(store, args.memories, args.votes, random.Random(7))
            token = store.grants.mint_token(name="bench", actor="bench").token
            last = store.event_feed.last_id()
            timeline_events = len(store.timeline.timeline(pid)["events"])
            seeded = time.perf_counter() - started
        finally:
            store.close()
        print(
            f"seeded {args.memories} memory entries and a proposal with {timeline_events} timeline events"
            f" in {seeded:.1f} s; {args.concurrency} concurrent clients, {args.seconds:.0f} s per route"
        )
        with _server(paths.root) as base:
            api = f"{base}/api/v1"
            routes = [
                ("GET /favicon.ico (static no-op)", f"{base}/favicon.ico"),
                ("GET /events?after=last (auth floor)", f"{api}/events?after={last}"),
                (f"GET /proposals/P/timeline ({timeline_events} events)", f"{api}/proposals/{pid}/timeline"),
                ("GET /memories (first page of 50)", f"{api}/memories"),
                ("GET /memories (deep cursor page of 50)", f"{api}/memories?cursor={deep_cursor}"),
                ("GET /memories?q=rollback (50)", f"{api}/memories?q=rollback"),
                ("GET /memories?q=<absent> (scans all)", f"{api}/memories?q=no-such-phrase"),
            ]
            results = [
                asyncio.run(_load(url, token, label, args.concurrency, args.seconds)) for label, url in routes
            ]
    baseline = results[0]
    for result in results:
        print(result.line(None if result is baseline else baseline))


if __name__ == "__main__":
    main()
