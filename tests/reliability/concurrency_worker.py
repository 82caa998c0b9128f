"""One writer of the concurrency test, run in a process (``python -m``) or a thread.

It increments shared counters (memory entries revised with ``expected_revision``, retrying on
``memory_revision_conflict``), records entries, reads, and casts votes on a shared proposal. It
reports what it did and every exception it did not expect; ``database is locked`` reaching it
counts as one.
"""

from __future__ import annotations

import json
import random
import sys
import traceback
from pathlib import Path
from typing import Any

from store import Conflict, ProjectPaths, Store, open_store

_MAX_RETRIES = 1000


def increment(store: Store, memory_id: str, actor: str) -> tuple[int, int]:
    """Add one revision to ``memory_id``; returns (the revision written, conflicts retried)."""
    for attempt in range(_MAX_RETRIES):
        current = store.memory_admin.get(memory_id)["memory"]["revision"]
        try:
            done = store.memory_admin.revise(
                memory_id, {"body_md": f"{actor} {attempt}", "expected_revision": current}, actor=actor
            )
        except Conflict as exc:
            if exc.code != "memory_revision_conflict":
                raise
            continue
        return int(done.body["revision"]["revision"]), attempt
    raise RuntimeError(f"no increment of {memory_id} in {_MAX_RETRIES} attempts")


def work(
    store: Store, *, counters: list[str], proposal_id: str, rounds: int, seed: int, actor: str
) -> dict[str, Any]:
    """Run ``rounds`` mixed operations; never raises."""
    rng = random.Random(seed)
    report: dict[str, Any] = {
        "increments": [],
        "conflicts": 0,
        "records": 0,
        "reads": 0,
        "votes": 0,
        "errors": [],
    }
    for _ in range(rounds):
        try:
            choice = rng.random()
            if choice < 0.5:
                memory_id = rng.choice(counters)
                revision, conflicts = increment(store, memory_id, actor)
                report["increments"].append([memory_id, revision])
                report["conflicts"] += conflicts
            elif choice < 0.65:
                store.memory.record(scope="project", kind="fact", title=f"{actor}", body_md="c", actor=actor)
                report["records"] += 1
            elif choice < 0.8:
                store.memory.query(scope="project", query="fact", limit=5)
                report["reads"] += 1
            else:
                store.reviews.cast(
                    proposal_id=proposal_id,
                    agent_id=rng.choice(["reviewer-1", "reviewer-2"]),
                    vote=rng.choice(["approve", "abstain"]),
                    reason_md=actor,
                    actor=actor,
                )
                report["votes"] += 1
        except Exception:  # reported, and the test fails on any
            report["errors"].append(traceback.format_exc(limit=3))
    return report


def main(argv: list[str]) -> None:
    """``ROOT OUT SEED ROUNDS PROPOSAL COUNTER...``."""
    root, out, seed, rounds, proposal_id, *counters = argv
    store = open_store(ProjectPaths(Path(root)))
    # A start barrier: every worker is open and waiting before any of them writes.
    print("ready", flush=True)
    sys.stdin.readline()
    try:
        report = work(
            store,
            counters=counters,
            proposal_id=proposal_id,
            rounds=int(rounds),
            seed=int(seed),
            actor=f"proc-{seed}",
        )
    finally:
        store.close()
    Path(out).write_text(json.dumps(report))


if __name__ == "__main__":
    main(sys.argv[1:])
