"""Memory store: record and query 100,000 entries.

Prints record throughput (single calls, each its own durable transaction, and bulk import in
batches) and ``memory.query`` latency for several query shapes, each beside a bare SQLite scan of
the same text columns measured in the same run: the floor any substring search over the store
must pay. Usage: ``python -m benchmarks.bench_memory [--entries N] [--repeat R]``.
"""

from __future__ import annotations

import argparse
import random
import sqlite3
import tempfile
import time
from functools import partial
from pathlib import Path
from typing import Any

from benchmarks._timing import time_repeated
from store import init_project, open_store

_WORDS = (
    "sql builder query cache index migration schema auth token retry backoff queue worker "
    "pagination cursor limit offset deploy rollback feature flag config logging metrics trace "
    "latency budget owner reviewer vote consensus decision constraint memory oracle patch"
).split()


def _entry(rng: random.Random, index: int) -> dict[str, object]:
    title = " ".join(rng.choices(_WORDS, k=5))
    body = " ".join(rng.choices(_WORDS, k=60))
    return {
        "scope": rng.choice(["project", f"T-{index % 500:04d}"]),
        "kind": rng.choice(["decision", "constraint", "fact", "summary"]),
        "title": title.capitalize(),
        "body_md": body,
        "importance": rng.randint(1, 100),
    }


def main() -> None:
    """Run the benchmark and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--single", type=int, default=300, help="entries recorded one call at a time")
    args = parser.parse_args()

    rng = random.Random(7)
    with tempfile.TemporaryDirectory(prefix="rt-bench-") as tmp:
        paths, _ = init_project(Path(tmp))
        store = open_store(paths)

        start = time.perf_counter()
        for index in range(args.single):
            store.memory.record(actor="bench", **_entry(rng, index))  # type: ignore[arg-type]
        single = time.perf_counter() - start

        start = time.perf_counter()
        batch = 5_000
        for offset in range(args.single, args.entries, batch):
            items = [_entry(rng, i) for i in range(offset, min(args.entries, offset + batch))]
            store.memory.record_many(items, actor="bench")
        bulk = time.perf_counter() - start
        bulk_count = args.entries - args.single

        print(f"entries: {args.entries}")
        print(f"record, one durable transaction per call: {args.single / single:10.0f} entries/s")
        print(f"record_many, batches of {batch}:            {bulk_count / bulk:10.0f} entries/s")
        print()

        raw = sqlite3.connect(paths.database)

        def bare_scan(needle: str) -> None:
            # The floor: read the four text columns of every row and test for the needle.
            raw.execute(
                "SELECT count(*) FROM memory_entries WHERE instr(lc_title, ?1) > 0 OR instr(lc_body, ?1) > 0"
                " OR instr(lc_scope, ?1) > 0 OR instr(lc_kind, ?1) > 0",
                (needle,),
            ).fetchone()

        cases: list[tuple[str, str, dict[str, Any]]] = [
            ("query 'rollback' (common word)", "rollback", {}),
            ("query 'sql builder' (rare phrase)", "sql builder", {}),
            ("query 'zzz-absent' (no match)", "zzz-absent", {}),
            ("query 'rollback' scope=project", "rollback", {"scope": "project"}),
            ("query '' (empty: by importance)", "", {}),
            ("query 'rollback' limit=0 (all matches)", "rollback", {"limit": 0}),
            ("query 'rollback cache' match=ranked", "rollback cache", {"match": "ranked"}),
        ]
        for label, needle, extra in cases:
            baseline = time_repeated(
                f"bare scan instr '{needle}'", partial(bare_scan, needle), repeat=args.repeat
            )
            measured = time_repeated(label, partial(store.memory.query, needle, **extra), repeat=args.repeat)
            print(baseline.line())
            print(measured.line(baseline))
        raw.close()
        store.close()


if __name__ == "__main__":
    main()
