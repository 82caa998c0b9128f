"""MemoryOracle launches: launch-to-warning time, and 8 concurrent launches against 8 sequential ones.

In one supervisor process: cold launches (each creates its container), then the same launches as
a long-running supervisor runs them, each claiming a container of its warm pool (``warm(2)``, the
pool ready before each launch). Baseline, measured in the same run, before and after: a bare
``docker run --rm`` of the role image (``--version``), the floor any containerised role pays.
``--image TAG`` runs the oracle (and the bare runs) with another build of the role image, say one
with a change to the runner, in a project configured for it. Usage: ``python -m
benchmarks.bench_oracle [--repeat N] [--image TAG]``.
Needs the Docker engine and the role image (``make image``).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import anyio

from capabilities.services import Services
from store import Store, init_project, open_store
from supervisor._supervisor import Supervisor
from supervisor.cli._demo import DEMO_PATCH
from supervisor.cli._project import operator_call
from supervisor.image._build import role_image_tag
from supervisor.logging import configure_logging


async def _tool(store: Store, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return await operator_call(Services(store=store), name, arguments)


async def _proposal(store: Store) -> str:
    task = await _tool(store, "task.create", {"title": "bench"})
    created = await _tool(
        store,
        "proposal.create",
        {"task_id": task["task"]["id"], "agent_id": "implementer-1", "title": "raw sql", "patch": DEMO_PATCH},
    )
    proposal_id = str(created["proposal"]["id"])
    await _tool(store, "proposal.request_review", {"proposal_id": proposal_id})
    return proposal_id


def _parse(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def _bare_docker_run(image: str, repeat: int) -> list[float]:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(
            ["docker", "run", "--rm", "--network", "none", image, "--version"],
            check=True,
            capture_output=True,
        )
        samples.append(time.perf_counter() - start)
    return samples


async def _run(repeat: int, image: str) -> None:
    with tempfile.TemporaryDirectory(prefix="rt-bench-") as tmp:
        paths, _ = init_project(Path(tmp))
        text = paths.config_file.read_text().replace(
            "max_concurrent_launches = 4", "max_concurrent_launches = 8"
        )
        text = text.replace(f'image = "{role_image_tag()}"', f'image = "{image}"')
        paths.config_file.write_text(text)
        store = open_store(paths)
        await _tool(
            store,
            "memory.record",
            {
                "scope": "project",
                "kind": "decision",
                "title": "All SQL goes through the query builder",
                "body_md": "x",
            },
        )
        proposals = [await _proposal(store) for _ in range(8)]
        bare = await anyio.to_thread.run_sync(_bare_docker_run, image, repeat)

        to_warning, to_return = [], []
        async with Supervisor(store) as supervisor:
            await supervisor.launch_role("memory_oracle", proposals[0])  # warm-up
            for _ in range(repeat):
                wall_start, start = time.time(), time.perf_counter()
                result = await supervisor.launch_role("memory_oracle", proposals[0])
                to_return.append(time.perf_counter() - start)
                assert result.warnings, "the demo launch should warn"
                to_warning.append(_parse(result.warnings[0].created_at) - wall_start)

            start = time.perf_counter()
            for proposal_id in proposals:
                await supervisor.launch_role("memory_oracle", proposal_id)
            sequential = time.perf_counter() - start

            start = time.perf_counter()
            async with anyio.create_task_group() as tg:
                for proposal_id in proposals:
                    tg.start_soon(supervisor.launch_role, "memory_oracle", proposal_id)
            concurrent = time.perf_counter() - start

            # The same launches as a long-running supervisor runs them: each claims a container of
            # its warm pool, started and waiting before the launch (``roundtable serve``).
            warm_warning, warm_return = [], []
            async with supervisor.warm(2) as pool:
                assert pool is not None
                for _ in range(repeat):
                    await pool.until_ready()
                    wall_start, start = time.time(), time.perf_counter()
                    result = await supervisor.launch_role("memory_oracle", proposals[0])
                    warm_return.append(time.perf_counter() - start)
                    warm_warning.append(_parse(result.warnings[0].created_at) - wall_start)
        store.close()
        bare += await anyio.to_thread.run_sync(_bare_docker_run, image, repeat)  # after as well as before

    bare_median = statistics.median(bare)
    print(f"bare docker run --rm (--version)          median {bare_median * 1000:8.1f} ms  (n={len(bare)})")
    for label, samples in (
        ("launch to warning event", to_warning),
        ("launch to result (cleaned up)", to_return),
        ("warm pool: launch to warning event", warm_warning),
        ("warm pool: launch to result", warm_return),
    ):
        median = statistics.median(samples)
        print(f"{label:<40} median {median * 1000:8.1f} ms  x{median / bare_median:5.2f} of bare run")
    ratio = concurrent / sequential
    print(f"{'8 launches sequential':<41} wall   {sequential * 1000:8.1f} ms")
    print(f"{'8 launches concurrent':<41} wall   {concurrent * 1000:8.1f} ms  x{ratio:5.2f} of sequential")


def main() -> None:
    """Run the benchmark and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--image", default=role_image_tag(), help="the role image (default: configured)")
    args = parser.parse_args()
    configure_logging()  # logs to stderr, so stdout holds only the figures
    anyio.run(_run, args.repeat, args.image)


if __name__ == "__main__":
    main()
