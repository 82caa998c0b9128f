"""Proposal timelines in a large event log, and proposal creation throughput.

1. Creates proposals through the store (each: diff validation, a durable patch file with fsyncs,
   one write transaction with its rows and events), beside a bare SQLite baseline of one
   single-row ``synchronous=FULL`` transaction per proposal measured in the same run.
2. Builds a log of ``--events`` events (default 1,000,000): a real proposal with a real history
   (versions, a round, votes, launches, oracle warnings citing memory) plus filler events of other
   proposals, bulk-inserted with ``executemany`` in one transaction.
3. Times ``proposal.timeline`` for the real proposal beside a full scan of the events table
   (``NOT INDEXED``) for the same proposal's events, and prints the query plan.

Usage: ``python -m benchmarks.bench_timeline [--events N] [--proposals N] [--repeat R]``.
"""

from __future__ import annotations

import argparse
import json
import random
import sqlite3
import tempfile
import time
from pathlib import Path

from benchmarks._timing import time_repeated
from store import Store, init_project, open_store

_DIFF = """\
diff --git a/src/module_{i}.py b/src/module_{i}.py
--- a/src/module_{i}.py
+++ b/src/module_{i}.py
@@ -1,3 +1,3 @@
 import os
-VALUE = {i}
+VALUE = {j}
 print(VALUE)
"""

_FILLER_TYPES = (
    "proposal.created",
    "proposal.patch_attached",
    "proposal.review_requested",
    "vote.cast",
    "decision.recorded",
    "role.started",
    "role.exited",
    "memory.recorded",
)


def _real_history(store: Store) -> tuple[str, str, str]:
    """One proposal with every kind of timeline entry; returns its ID, its task and a cited memory."""
    task = store.tasks.create(title="Benchmark task", actor="bench")
    proposal, _ = store.proposals.create(
        task_id=task.id, agent_id="implementer-1", title="Real", patch=_DIFF.format(i=0, j=1), actor="bench"
    )
    pid = str(proposal["id"])
    store.reviews.request_review(proposal_id=pid, actor="bench")
    store.reviews.cast(proposal_id=pid, agent_id="reviewer-1", vote="approve", reason_md="ok", actor="bench")
    store.proposals.attach_patch(proposal_id=pid, patch=_DIFF.format(i=0, j=2), actor="bench")
    for agent in ("reviewer-1", "reviewer-2"):
        store.reviews.cast(proposal_id=pid, agent_id=agent, vote="approve", reason_md="ok", actor="bench")
    memory = store.memory.record(scope="project", kind="decision", title="Rule", body_md="b", actor="bench")
    store.decisions.record(outcome="noted", rationale_md="fine", proposal_id=pid, actor="bench")
    return pid, task.id, memory.id


def _fill(database: Path, count: int, pid: str, task_id: str, memory_id: str, rng: random.Random) -> float:
    """Bulk-insert ``count`` events: ~0.002% for ``pid`` (launches, warnings), the rest spread wide."""
    conn = sqlite3.connect(database)
    conn.execute("PRAGMA journal_mode = WAL")
    start = time.perf_counter()
    rows = []
    for index in range(count):
        if index % 50_000 == 0:
            kind = "memory.oracle_warning" if index % 100_000 == 0 else "role.started"
            warning = {"message_md": "contradiction", "cited_memory_ids": [memory_id]}
            rows.append((kind, "2026-01-01T00:00:00.000000Z", "bench", task_id, pid, json.dumps(warning)))
            continue
        other = f"P-filler-{rng.randrange(20_000):05d}"
        kind = _FILLER_TYPES[index % len(_FILLER_TYPES)]
        payload = {"n": index}
        rows.append(
            (kind, "2026-01-01T00:00:00.000000Z", "bench", f"T-{other[-5:]}", other, json.dumps(payload))
        )
    conn.execute("BEGIN")
    conn.executemany(
        "INSERT INTO events (type, created_at, actor, task_id, proposal_id, payload)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        rows,
    )
    conn.execute("COMMIT")
    conn.execute("ANALYZE")
    conn.close()
    return time.perf_counter() - start


class _Floor:
    """The floor: one single-row ``synchronous=FULL`` write transaction on an open WAL database."""

    def __init__(self, database: Path):
        self.conn = sqlite3.connect(database, isolation_level=None)
        self.conn.execute("PRAGMA journal_mode = WAL")
        self.conn.execute("PRAGMA synchronous = FULL")
        self.conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT)")

    def insert(self) -> None:
        self.conn.execute("BEGIN IMMEDIATE")
        self.conn.execute("INSERT INTO t (body) VALUES (?)", ("x" * 300,))
        self.conn.execute("COMMIT")


def main() -> None:
    """Run the benchmark and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--proposals", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=25)
    parser.add_argument(
        "--dir", default=None, help="where to build the scratch project (default: the temp dir)"
    )
    options = parser.parse_args()
    rng = random.Random(4)
    with tempfile.TemporaryDirectory(prefix="roundtable-bench-", dir=options.dir) as scratch:
        paths, _ = init_project(Path(scratch) / "proj")
        store = open_store(paths)
        try:
            task = store.tasks.create(title="Throughput", actor="bench")
            counter = iter(range(1, 10**9))

            def create() -> None:
                i = next(counter)
                store.proposals.create(
                    task_id=task.id,
                    agent_id="implementer-1",
                    title=f"P{i}",
                    patch=_DIFF.format(i=i, j=i + 1),
                    actor="bench",
                )

            created = time_repeated("proposal.create (file + fsyncs + txn)", create, repeat=options.proposals)
            floor_db = _Floor(Path(scratch) / "floor.db")
            floor = time_repeated(
                "baseline: one synchronous=FULL insert txn", floor_db.insert, repeat=options.proposals
            )
            floor_db.conn.close()
            print(f"Proposal creation, {options.proposals} proposals, one at a time")
            print("  " + floor.line())
            print("  " + created.line(floor))
            print(f"  throughput {1 / created.median:8.1f} proposals/s (median latency)")

            pid, task_id, memory_id = _real_history(store)
            built = _fill(paths.database, options.events, pid, task_id, memory_id, rng)
            total = store.db.read(lambda conn: conn.execute("SELECT count(*) FROM events").fetchone()[0])
            print(f"\nEvent log: {total:,} events (bulk insert of {options.events:,} took {built:.1f} s)")
            timeline = store.timeline.timeline(pid)
            print(f"  the proposal's timeline holds {len(timeline['events'])} events")
            plan = store.db.read(
                lambda conn: conn.execute(
                    "EXPLAIN QUERY PLAN SELECT * FROM events WHERE proposal_id = ? ORDER BY id", (pid,)
                ).fetchall()
            )
            print("  plan: " + "; ".join(str(row[3]) for row in plan))

            def scan() -> object:
                return store.db.read(
                    lambda conn: conn.execute(
                        "SELECT * FROM events NOT INDEXED WHERE proposal_id = ? ORDER BY id", (pid,)
                    ).fetchall()
                )

            scanned = time_repeated(
                "full scan of events (NOT INDEXED), same rows", scan, repeat=max(3, options.repeat // 5)
            )
            indexed = time_repeated(
                "proposal.timeline (index + enrichment)",
                lambda: store.timeline.timeline(pid),
                repeat=options.repeat,
            )
            print("  " + scanned.line())
            print("  " + indexed.line())
            print(
                f"  the full scan is {scanned.median / indexed.median:,.0f}x slower than the timeline query"
            )
        finally:
            store.close()


if __name__ == "__main__":
    main()
