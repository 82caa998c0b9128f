"""Patch artifacts on both backends, same run: files under .roundtable/patches (SQLite) against
``patch_blobs`` rows (PostgreSQL).

For a one-hunk diff and a large one (``--large-kib``, a new file of that size), round after round so
a burst of load on the machine hits both backends alike, it times:

- ``proposal.create``: diff validation, staging (a durable file, or nothing), the transaction with
  the version row (and, on PostgreSQL, the blob);
- ``proposal.patch``: the proposal's view (its versions, round, consensus) and the verified read of
  the current version;
- ``read_verified`` alone: the safe reader and a SHA-256, or one ``SELECT`` of the blob and a SHA-256.

Each PostgreSQL line prints its ratio to the SQLite line of the same operation. The server is the
one :mod:`benchmarks.bench_postgres` uses (``ROUNDTABLE_TEST_PG_URL``, or a throwaway one), on
loopback with ``fsync=off`` when throwaway: the figures compare code paths, not disks.

Usage: ``python -m benchmarks.bench_patch_artifacts [--repeat R] [--large-kib K]``.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from functools import partial

from benchmarks._timing import time_together
from benchmarks.bench_postgres import both_backends, print_against_sqlite
from store import Store

_SMALL = "--- a/f.txt\n+++ b/f.txt\n@@ -1 +1 @@\n-old {i}\n+new {i}\n"


def _large(kib: int) -> str:
    """A ``str.format`` template (``{i}`` names the new file) of a new file of about ``kib`` KiB."""
    line = "+a line of a large new file, long enough to be realistic {n:08d}\n"
    count = kib * 1024 // len(line.format(n=0))
    body = "".join(line.format(n=n) for n in range(count))  # digits only: no braces to escape
    return "--- /dev/null\n+++ b/big{i}.txt\n" + f"@@ -0,0 +1,{count} @@\n" + body


def _operations(label: str, store: Store, diffs: dict[str, str]) -> list[tuple[str, Callable[[], object]]]:
    task = store.tasks.create(title="bench", actor="bench")
    counter = iter(range(1, 10**9))
    operations: list[tuple[str, Callable[[], object]]] = []
    for size, template in diffs.items():
        first, _ = store.proposals.create(
            task_id=task.id, agent_id="implementer-1", title="p", patch=template.format(i=0), actor="bench"
        )
        pid = str(first["id"])

        def create(template: str = template) -> object:
            return store.proposals.create(
                task_id=task.id,
                agent_id="implementer-1",
                title="p",
                patch=template.format(i=next(counter)),
                actor="bench",
            )

        operations.append((f"{label}: proposal.create, {size}", create))
        record, _ = store.proposals.patch(pid)
        operations += [
            (f"{label}: proposal.patch, {size}", partial(store.proposals.patch, pid)),
            (f"{label}: read_verified alone, {size}", partial(store.patches.read_verified, record)),
        ]
    return operations


def main() -> None:
    """Time creating and reading patch versions on both backends, print ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--large-kib", type=int, default=512)
    args = parser.parse_args()
    large = _large(args.large_kib)
    diffs = {"one hunk": _SMALL, f"{len(large.format(i=0)) // 1024} KiB": large}
    with both_backends() as (sqlite, postgres):
        print(f"patch artifacts: files (SQLite) against rows in {postgres.db.describe()}")
        operations = [*_operations("sqlite", sqlite, diffs), *_operations("postgresql", postgres, diffs)]
        timings = time_together(*operations, repeat=args.repeat)
    print_against_sqlite(timings)


if __name__ == "__main__":
    main()
