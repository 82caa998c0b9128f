"""Peak memory and wall time of a real oracle launch, per embedded provider, on one proposal.

Each provider reviews the same proposal (a patch of many files against many decisions) in a real
hardened container, alternately, ``--repeat`` times. The container's peak memory is its cgroup's
``memory.max_usage_in_bytes`` (cgroup v1) or ``memory.peak`` (v2), sampled while it lives: the
figure the launch's ``memory_limit`` (512 MB by default) is measured against. The baseline,
measured in the same run, is the ``lexical`` provider. Usage:
``python -m benchmarks.bench_role_memory [--repeat N] [--files N] [--decisions N]``.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import docker

from benchmarks.bench_oracle import _tool
from store import Store, init_project, open_store
from supervisor import Supervisor
from supervisor.logging import configure_logging

_CGROUP_FILES = (
    "/sys/fs/cgroup/memory/docker/{id}/memory.max_usage_in_bytes",
    "/sys/fs/cgroup/system.slice/docker-{id}.scope/memory.peak",
)


def _patch(files: int) -> str:
    hunks = []
    for index in range(files):
        added = "".join(
            f"+def handler_{index}_{n}(db, user):\n"
            f'+    log.info("user %s", user.email)\n'
            f'+    return db.execute(f"SELECT * FROM t{n} WHERE id = {{user.id}}")\n'
            for n in range(20)
        )
        hunks.append(f"--- /dev/null\n+++ b/app/mod_{index}.py\n@@ -0,0 +1,{60} @@\n{added}")
    return "".join(hunks)


def _peak(container_id: str) -> int | None:
    for template in _CGROUP_FILES:
        try:
            return int(Path(template.format(id=container_id)).read_text())
        except (OSError, ValueError):
            continue
    return None


async def _sample(proposal_id: str, peaks: list[int], stop: anyio.Event) -> None:
    client = docker.from_env()
    try:
        while not stop.is_set():
            listed = await anyio.to_thread.run_sync(
                lambda: client.containers.list(filters={"label": f"roundtable.proposal={proposal_id}"})
            )
            peaks.extend(p for c in listed if (p := _peak(c.id)) is not None)
            with anyio.move_on_after(0.05):
                await stop.wait()
    finally:
        client.close()


async def _launch(store: Store, proposal_id: str, provider: str) -> tuple[float, int | None, int]:
    peaks: list[int] = []
    stop = anyio.Event()
    async with anyio.create_task_group() as group:
        group.start_soon(_sample, proposal_id, peaks, stop)
        start = time.perf_counter()
        async with Supervisor(store) as supervisor:
            result = await supervisor.launch_role("memory_oracle", proposal_id, provider=provider)
        elapsed = time.perf_counter() - start
        stop.set()
    return elapsed, (max(peaks) if peaks else None), len(result.warnings)


async def _setup(store: Store, files: int, decisions: int) -> str:
    for n in range(decisions):
        await _tool(
            store,
            "memory.record",
            {
                "scope": "project",
                "kind": "decision",
                "title": f"Decision {n}: all SQL goes through the query builder in module {n}",
                "body_md": f"Never build SQL strings by hand in module {n}; never log `user.email`.",
            },
        )
    task = await _tool(store, "task.create", {"title": "bench"})
    created = await _tool(
        store,
        "proposal.create",
        {"task_id": task["task"]["id"], "agent_id": "implementer-1", "title": "b", "patch": _patch(files)},
    )
    return str(created["proposal"]["id"])


async def _run(repeat: int, files: int, decisions: int) -> None:
    figures: dict[str, list[tuple[float, int | None, int]]] = {"lexical": [], "judge": []}
    with tempfile.TemporaryDirectory(prefix="rt-bench-") as tmp:
        store = open_store(init_project(Path(tmp))[0])
        proposal_id = await _setup(store, files, decisions)
        for _ in range(repeat):
            for provider, runs in figures.items():  # alternately, so drift hits both alike
                runs.append(await _launch(store, proposal_id, provider))
    _report(figures, files, decisions)


def _report(figures: dict[str, Any], files: int, decisions: int) -> None:
    base = figures["lexical"]
    print(f"oracle launch: {files} new files of 60 lines, {decisions} decisions, one proposal, same run")
    for provider, runs in figures.items():
        wall = statistics.median(r[0] for r in runs)
        peaks = [r[1] for r in runs if r[1] is not None]
        peak = statistics.median(peaks) / 2**20 if peaks else float("nan")
        base_peaks = [r[1] for r in base if r[1] is not None]
        ratio = (
            (statistics.median(peaks) / statistics.median(base_peaks))
            if peaks and base_peaks
            else float("nan")
        )
        base_wall = statistics.median(r[0] for r in base)
        print(
            f"  {provider:8} wall {wall:6.2f} s (x{wall / base_wall:.2f})"
            f"  peak {peak:6.1f} MiB (x{ratio:.2f})  warnings {runs[0][2]}"
        )


def main() -> None:
    """Run the benchmark and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--files", type=int, default=40)
    parser.add_argument("--decisions", type=int, default=40)
    args = parser.parse_args()
    configure_logging()
    anyio.run(_run, args.repeat, args.files, args.decisions)


if __name__ == "__main__":
    main()
