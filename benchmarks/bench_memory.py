"""Memory store: record and query, on two corpora, every figure beside a baseline of the same run.

Corpora:

- ``vocabulary``, the original: entries drawn from 34 words, so every query matches nearly every
  entry and no index can help; kept so that its figures compare with earlier runs;
- ``realistic`` (:mod:`benchmarks._corpus`): Zipf over 40,000 words plus code identifiers, titles
  of 4 to 12 words, bodies of 30 to 300; at ``--entries`` (100,000) and, with ``--million``,
  at 1,000,000 as well (its load alone takes several minutes).

The baseline of every query row, **bare scan**, is the one this benchmark always used: on a plain
``sqlite3`` connection of its own, ``SELECT count(*) FROM memory_entries WHERE instr(lc_title, q) >
0 OR instr(lc_body, q) > 0 OR instr(lc_scope, q) > 0 OR instr(lc_kind, q) > 0``. It reads the four
lower-cased text columns of every row, tests them for the needle and hands back only a count: the
floor any scanning substring search pays, without scoring, ordering or returning anything. Rows
with a second baseline say so:

- ``scan path``: ``memory.query``'s own substring search forced past the trigram index (what it
  did before the index), same answer: "no slower than the scan" is the ratio to this;
- ``bare fetch`` (``limit`` 0): the bare scan selecting the entry columns of its matches instead,
  read into Python tuples: the floor of handing every match back;
- ``found nowhere`` (a needle in every entry): the bare scan of a needle that no row holds, which
  reads all of every row's text, as scoring a needle in every entry must.

Operations of one row are timed in turn, round after round (:func:`benchmarks._timing.time_together`),
and each ratio is of medians. Usage: ``python -m benchmarks.bench_memory [--entries N] [--repeat R]
[--million] [--corpus vocabulary|realistic|both] [--keep DIR] [--only TEXT]``.
"""

from __future__ import annotations

import argparse
import json
import random
import sqlite3
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

from benchmarks._corpus import Corpus
from benchmarks._memory_cases import Case, realistic_cases, vocabulary_cases
from benchmarks._rank_bulk import build_ranked_index
from benchmarks._timing import Timing, time_together
from store import Store, init_project, open_store
from store.db import _migrations
from store.memory import _store as _store_module
from store.memory import _write as _write_module
from store.memory._entry import entry_from_values
from store.memory._query import entries_by_id, search  # the forced scan path; not a public API
from store.memory._ranked import ranked_ids
from store.memory._search import MemoryFilter

_WORDS = (
    "sql builder query cache index migration schema auth token retry backoff queue worker "
    "pagination cursor limit offset deploy rollback feature flag config logging metrics trace "
    "latency budget owner reviewer vote consensus decision constraint memory oracle patch"
).split()

_CORE_COLUMNS = "id, scope, kind, title, body_md, source_event_id, importance, status, created_at, updated_at"
_BARE_WHERE = " OR ".join(f"instr({col}, ?1) > 0" for col in ("lc_title", "lc_body", "lc_scope", "lc_kind"))


def _vocabulary_entries(rng: random.Random) -> Iterator[dict[str, object]]:
    """The original corpus, entry for entry as this benchmark always drew it."""
    index = 0
    while True:
        yield _vocabulary_entry(rng, index)
        index += 1


def _vocabulary_entry(rng: random.Random, index: int) -> dict[str, object]:
    title = " ".join(rng.choices(_WORDS, k=5))
    body = " ".join(rng.choices(_WORDS, k=60))
    return {
        "scope": rng.choice(["project", f"T-{index % 500:04d}"]),
        "kind": rng.choice(["decision", "constraint", "fact", "summary"]),
        "title": title.capitalize(),
        "body_md": body,
        "importance": rng.randint(1, 100),
    }


def _load(store: Store, entries: Iterator[dict[str, object]], count: int, single: int) -> None:
    """Record ``count`` entries, the first ``single`` one call at a time, and print the rates."""
    start = time.perf_counter()
    for _ in range(min(single, count)):
        store.memory.record(actor="bench", **next(entries))  # type: ignore[arg-type]
    one = time.perf_counter() - start
    batch, bulk_count = 5_000, max(0, count - single)
    start = time.perf_counter()
    for offset in range(0, bulk_count, batch):
        items = [next(entries) for _ in range(min(batch, bulk_count - offset))]
        store.memory.record_many(items, actor="bench")
    bulk = time.perf_counter() - start
    print(f"entries: {count}")
    print(f"record, one durable transaction per call: {single / one:10.0f} entries/s")
    if bulk_count:
        print(f"record_many, batches of {batch}:            {bulk_count / bulk:10.0f} entries/s")


def _bulk_load(store: Store, entries: Iterator[dict[str, object]], count: int) -> None:
    """Record ``count`` entries with ``record_many`` while the indexes' write hooks are off (the
    trigram triggers dropped, the ranked index skipped), then build each index once over every
    row: the trigram index by FTS5's ``rebuild``, the ranked one in one pass
    (:func:`benchmarks._rank_bulk.build_ranked_index`: what the store's backlog drain leaves,
    each list written once). The rows are the same as :func:`_load` writes; the lists hold the
    same postings (cut into other blocks: where a block splits depends on the order of writes),
    so every query answers the same. Used at 1,000,000 entries, where writing through the indexes takes
    hours on a loaded machine; its figures are printed, but they are not the write path's."""
    start = time.perf_counter()
    trigram = next(m for m in _migrations.load_migrations() if m.name == "0009_memory_trigram")
    triggers = [sql for sql in trigram.statements if sql.startswith("CREATE TRIGGER")]
    store.db.write(lambda conn: [conn.execute(f"DROP TRIGGER {name}") for name in _TRIGGERS])
    batch = 5_000
    with _unranked():
        for offset in range(0, count, batch):
            store.memory.record_many(
                [next(entries) for _ in range(min(batch, count - offset))], actor="bench"
            )
    loaded = time.perf_counter()
    store.db.write(lambda conn: [conn.execute(sql) for sql in triggers])
    store.db.write(
        lambda conn: conn.execute("INSERT INTO memory_trigram (memory_trigram) VALUES ('rebuild')")
    )
    indexed = time.perf_counter()
    build_ranked_index(store.db)
    ranked = time.perf_counter()
    print(f"entries: {count} (bulk load: the indexes built after the rows)")
    print(
        f"record_many, no index: {loaded - start:8.0f} s; trigram rebuild: {indexed - loaded:6.0f} s;"
        f" ranked index: {ranked - indexed:6.0f} s"
    )


def _run(store: Store, raw: sqlite3.Connection, case: Case, repeat: int) -> None:
    """Time one case with its baselines and print them, the baseline first."""
    needle = case.query.lower()

    def bare() -> object:
        return raw.execute(f"SELECT count(*) FROM memory_entries WHERE {_BARE_WHERE}", (needle,)).fetchone()

    def query() -> list[Any]:
        return store.memory.query(case.query, **case.options)

    operations: list[tuple[str, Callable[[], object]]] = [(f"bare scan instr '{needle}'", bare)]
    operations.append((case.label, query))
    if case.scan_path:
        filters = _filters(case)

        def scan() -> object:
            return store.db.read(lambda conn: search(conn, case.query, filters, indexed=False))

        operations.append(("  the same, forced to scan (scan path)", scan))
    if case.every_match:
        filters = _filters(case)

        def every() -> object:
            everything = partial(ranked_ids, text=case.query, filters=replace(filters, limit=0))
            return store.db.read(
                lambda conn: entries_by_id(conn, everything(conn)[: filters.limit], entry_from_values)
            )

        operations.append(("  the same, every match scored (fallback)", every))
    if case.read_all:

        def nowhere() -> object:
            sql = f"SELECT count(*) FROM memory_entries WHERE {_BARE_WHERE}"
            return raw.execute(sql, ("\u2603 found nowhere",)).fetchone()

        operations.append(("  bare scan of a needle found nowhere", nowhere))
    if case.bare_fetch:

        def fetch() -> object:
            sql = f"SELECT {_CORE_COLUMNS} FROM memory_entries WHERE {_BARE_WHERE}"
            return raw.execute(sql, (needle,)).fetchall()

        operations.append(("  bare fetch of the matches' columns", fetch))
    if case.as_json:

        def answer() -> object:
            return json.dumps({"entries": [entry.core() for entry in query()]})

        operations.append(("  the same as the tool's JSON answer", answer))
    baseline, measured, *others = time_together(*operations, repeat=repeat * case.rounds)
    print(baseline.line())
    print(measured.line(baseline) + (f"   goal {case.goal}" if case.goal else ""))
    for other in others:
        print(_against(other, baseline, measured))


def _filters(case: Case) -> MemoryFilter:
    """The filters ``memory.query`` makes of the case's options."""
    options = case.options
    limit = int(options.get("limit", 10))
    scope, kind, allowed = options.get("scope"), options.get("kind"), options.get("allowed_scopes")
    return MemoryFilter(scope, kind, allowed, False, limit)


def _against(other: Timing, baseline: Timing, measured: Timing) -> str:
    """A second baseline's line, with the measured row's ratio to it."""
    return other.line(baseline) + f"   (query at x{measured.median / other.median:5.2f} of this)"


_TRIGGERS = ("memory_trigram_insert", "memory_trigram_update", "memory_trigram_delete")


def _fts5() -> list[str]:
    """What the ranked search kept before its own index (migration 0012 dropped it): the FTS5
    table and its triggers, as migration 0001 made them."""
    first = next(m for m in _migrations.load_migrations() if m.name == "0001_events_and_memory")
    return [sql for sql in first.statements if "memory_fts" in sql]


_HOOK = "index_entries"
"""The ranked index's write hook, in each module that writes an entry's text through ``record``."""


@contextmanager
def _unranked() -> Iterator[None]:
    """Writes made meanwhile skip the ranked index (the store before migration 0012)."""
    modules = (_write_module, _store_module)
    saved = [getattr(module, _HOOK) for module in modules]
    for module in modules:
        setattr(module, _HOOK, lambda conn, ids: None)
    try:
        yield
    finally:
        for module, hook in zip(modules, saved, strict=True):
            setattr(module, _HOOK, hook)


def _write_cost(corpus: Corpus, *, batches: int = 8, size: int = 1_000, single: int = 200) -> None:
    """What the indexes cost a write: the same entries recorded, in turn, into three projects:
    as shipped (trigram index and the ranked index); as before the ranked index (trigram index and
    the FTS5 table it replaced); with neither (only the table), one call at a time, then
    ``record_many`` batches."""
    labels = ("as shipped (trigram + ranked index)", "before (trigram + FTS5)", "no index")
    with tempfile.TemporaryDirectory(prefix="rt-bench-") as tmp:
        stores = []
        for name in ("shipped", "before", "bare"):
            paths, _ = init_project(Path(tmp) / name)
            stores.append(open_store(paths))
        stores[1].db.write(lambda conn: [conn.execute(sql) for sql in _fts5()])
        stores[2].db.write(lambda conn: [conn.execute(f"DROP TRIGGER {name}") for name in _TRIGGERS])

        def timed(index: int, write: Callable[[], object]) -> float:
            start = time.perf_counter()
            with nullcontext() if index == 0 else _unranked():
                write()
            return time.perf_counter() - start

        ones, bulk = [0.0] * 3, [0.0] * 3
        for fields in corpus.entries(0, single):
            for index, store in enumerate(stores):
                ones[index] += timed(index, partial(store.memory.record, actor="bench", **fields))  # type: ignore[arg-type]
        for _ in range(batches):
            batch = list(corpus.entries(0, size))
            for index, store in enumerate(stores):
                bulk[index] += timed(index, partial(store.memory.record_many, batch, actor="bench"))
        for store in stores:
            store.close()
    rows = (("record, one call each", ones, single), ("record_many", bulk, batches * size))
    for label, spent, count in rows:
        for index, name in enumerate(labels):
            ratio = spent[index] / spent[2]
            print(f"{label + ', ' + name:<66} {count / spent[index]:8.0f} entries/s   x{ratio:5.2f} no index")
        print(f"{label}: as shipped at x{spent[0] / spent[1]:5.2f} the time of before")


def _bench(
    label: str,
    entries: Iterator[dict[str, object]],
    count: int,
    cases: list[Case],
    args: Any,
    repeat: int,
    keep: str | None = None,
) -> None:
    """Load ``count`` entries into a new project (or reuse ``keep/<count>``) and run every case."""
    print(f"== {label} ==")
    with tempfile.TemporaryDirectory(prefix="rt-bench-") as tmp:
        root = Path(keep) / str(count) if keep else Path(tmp)
        loaded = (root / ".roundtable" / "roundtable.db").exists()
        paths, _ = init_project(root)
        store = open_store(paths)
        if loaded:
            print(f"entries: {count} (reused from {root}: no load figures)")
            count_sql = "SELECT count(*) FROM memory_entries"
            stored = store.db.read(lambda conn: conn.execute(count_sql).fetchone())
            assert stored[0] == count, (stored[0], count)
        elif count >= 1_000_000:
            _bulk_load(store, entries, count)
        else:
            _load(store, entries, count, args.single)
        print()
        raw = sqlite3.connect(paths.database)
        for case in cases:
            if args.only is None or args.only in case.label:
                _run(store, raw, case, repeat)
        raw.close()
        store.close()
    print()


def main() -> None:
    """Run the benchmark and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--single", type=int, default=300, help="entries recorded one call at a time")
    parser.add_argument("--corpus", choices=("vocabulary", "realistic", "both", "none"), default="both")
    parser.add_argument("--million", action="store_true", help="also the realistic corpus at 1,000,000")
    parser.add_argument("--million-repeat", type=int, default=5, help="--repeat at 1,000,000 entries")
    parser.add_argument(
        "--keep",
        help="load the realistic corpus into DIR/<entries> once and reuse it in later runs (the same seed "
        "gives the same entries; a reused project prints no load figures)",
    )
    parser.add_argument("--only", help="run only the query rows whose label contains this text")
    args = parser.parse_args()

    if args.corpus in ("vocabulary", "both"):
        entries = _vocabulary_entries(random.Random(7))
        _bench("vocabulary corpus (34 words)", entries, args.entries, vocabulary_cases(), args, args.repeat)
    if args.corpus in ("realistic", "both"):
        if args.only is None:
            print("== what the indexes cost a write (realistic entries) ==")
            _write_cost(Corpus(seed=16))
            print()
        corpus = Corpus()
        cases = realistic_cases(corpus, full=True)
        entries = corpus.entries(0, args.entries)
        _bench("realistic corpus", entries, args.entries, cases, args, args.repeat, args.keep)
    if args.million:
        corpus = Corpus()
        cases = realistic_cases(corpus, full=False)
        entries = corpus.entries(0, 1_000_000)
        _bench("realistic corpus", entries, 1_000_000, cases, args, args.million_repeat, args.keep)


if __name__ == "__main__":
    main()
