"""The same store operations on SQLite and on PostgreSQL, measured in the same run.

For each backend a fresh project (PostgreSQL: its own schema on a real server) gets ``--entries``
memory entries and one proposal with a short history; then, round after round so a burst of load
on the machine hits both alike, it times:

- ``memory.query`` substring (a word in a few percent of the entries) and ranked (two words);
- ``proposal.create`` (diff validation, a durable patch file, one write transaction with events);
- ``proposal.timeline`` of the proposal with history.

Each PostgreSQL line prints its ratio to the SQLite line of the same operation. The server is
``ROUNDTABLE_TEST_PG_URL`` when set, else a throwaway one started with ``.ci/postgres.sh``
(installed from Debian's packages when missing) and removed afterwards. PostgreSQL here runs on
loopback with ``fsync=off``: the figures compare the code paths, not disks.

Usage: ``python -m benchmarks.bench_postgres [--entries N] [--repeat R]``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from benchmarks._timing import Timing, time_together
from store import Store, init_project, open_store
from store.db import ENV_STORE_URL

_REPO = Path(__file__).resolve().parent.parent
_DIFF = "--- a/f.txt\n+++ b/f.txt\n@@ -1 +1 @@\n-old {i}\n+new {i}\n"
_WORDS = ("retry", "timeout", "schema", "ledger", "cache", "vote", "socket", "index")


@contextmanager
def _server() -> Iterator[str]:
    given = os.environ.get("ROUNDTABLE_TEST_PG_URL", "").strip()
    if given:
        yield given
        return
    folder = tempfile.mkdtemp(prefix="roundtable-pg.")
    script = str(_REPO / ".ci" / "postgres.sh")
    try:
        url = subprocess.run(["bash", script, "start", folder], capture_output=True, text=True, check=True)
        yield url.stdout.strip()
    finally:
        subprocess.run(["bash", script, "stop", folder], capture_output=True, check=False)


def _drop_schema(url: str, store: Store) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{getattr(store.db, "schema", "")}" CASCADE')


def _seed(store: Store, entries: int) -> str:
    batch = [
        {
            "scope": "project" if i % 3 else f"T-{i % 50}",
            "kind": "decision" if i % 5 else "fact",
            "title": f"{_WORDS[i % len(_WORDS)]} rule {i}",
            "body_md": f"Entry {i}: keep the {_WORDS[(i * 7) % len(_WORDS)]} bounded and logged.",
            "importance": 1 + i % 90,
        }
        for i in range(entries)
    ]
    for start in range(0, entries, 500):
        store.memory.record_many(batch[start : start + 500], actor="bench")
    task = store.tasks.create(title="bench", actor="bench")
    proposal, _ = store.proposals.create(
        task_id=task.id, agent_id="implementer-1", title="p", patch=_DIFF.format(i=0), actor="bench"
    )
    pid = str(proposal["id"])
    store.reviews.request_review(proposal_id=pid, actor="bench")
    for agent in ("reviewer-1", "reviewer-2"):
        store.reviews.cast(proposal_id=pid, agent_id=agent, vote="approve", reason_md="ok", actor="bench")
    return pid


def _operations(label: str, store: Store, pid: str) -> list[tuple[str, Callable[[], object]]]:
    task_id = str(store.proposals.get(pid)["task_id"])
    counter = iter(range(1, 10**9))

    def create() -> object:
        i = next(counter)
        return store.proposals.create(
            task_id=task_id, agent_id="implementer-1", title=f"p{i}", patch=_DIFF.format(i=i), actor="bench"
        )

    return [
        (
            f"{label}: memory.query substring 'ledger rule'",
            lambda: store.memory.query("ledger rule", limit=10),
        ),
        (
            f"{label}: memory.query ranked 'socket cache'",
            lambda: store.memory.query("socket cache", match="ranked"),
        ),
        (f"{label}: proposal.create", create),
        (f"{label}: proposal.timeline", lambda: store.timeline.timeline(pid)),
    ]


@contextmanager
def both_backends() -> Iterator[tuple[Store, Store]]:
    """A fresh SQLite project and a fresh PostgreSQL one (its schema dropped afterwards)."""
    with _server() as url, tempfile.TemporaryDirectory() as scratch:
        os.environ.pop(ENV_STORE_URL, None)
        sqlite = open_store(init_project(Path(scratch) / "sqlite")[0])
        os.environ[ENV_STORE_URL] = url
        postgres = open_store(init_project(Path(scratch) / "postgres")[0])
        os.environ.pop(ENV_STORE_URL, None)
        try:
            yield sqlite, postgres
        finally:
            sqlite.close()
            postgres.close()
            _drop_schema(url, postgres)


def print_against_sqlite(timings: list[Timing]) -> None:
    """Print SQLite's timings, then PostgreSQL's (the second half) each with its ratio to SQLite's."""
    half = len(timings) // 2
    baselines: list[Timing | None] = [None] * half + timings[:half]
    for timing, baseline in zip(timings, baselines, strict=True):
        print(timing.line(baseline))


def main() -> None:
    """Seed both backends, time the operations round after round, print ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=5_000)
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args()
    with both_backends() as (sqlite, postgres):
        print(f"{args.entries} memory entries per backend; {postgres.db.describe()}")
        operations = [
            *_operations("sqlite", sqlite, _seed(sqlite, args.entries)),
            *_operations("postgresql", postgres, _seed(postgres, args.entries)),
        ]
        timings = time_together(*operations, repeat=args.repeat)
    print_against_sqlite(timings)


if __name__ == "__main__":
    main()
