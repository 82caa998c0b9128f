"""Launches handed to a running ``roundtable serve`` with a warm pool, beside a bare ``docker run``.

In one run, on one project whose ``roundtable serve`` keeps ``--pool`` containers warm:

* **warm launch**: ``docker run --rm --network none IMAGE --version`` (the engine's floor) and
  ``roundtable oracle launch P --wait`` as a user runs it (a new process, handed to the serve, which
  claims a pooled container), interleaved; before each launch the serve is let settle, untimed: its
  pool full (the ``pool.ready`` hand-off operation answers once its containers wait for a claim) and
  nothing of an earlier launch left to remove (a serve defers removals while launches run, and the
  next timed section must not meet them);
* **throughput**: 8 such launches one after another, then 8 at once (8 processes started
  together), each from a full pool of 8 (``max_concurrent_launches`` 8), interleaved over rounds.

Prints the medians and the ratios: warm launch / bare run (goal <= 0.5), and the throughput of 8 at once
over 8 in turn (goal >= 3), and beside it the ceiling the container engine's own CPU sets on it on this
machine (:class:`benchmarks._engine_floor.EngineFloor`: every launch is one container the engine
creates, starts and removes; on 2 cores that work alone bounds 8 at once from below, and an idle
interval after each round, once the serve's containers have settled, measures the machine's
background). ``--cpu`` also prints where the CPU of the
8-at-once rounds went, per launch: the serve, the 8 commands, the containers, the engine's daemons, the
rest of the machine (:class:`benchmarks._cpu.CpuMeter`). ``--tree DIR[@IMAGE]`` (repeatable) runs the
serve and the command of that source tree (``PYTHONPATH``) with that role image (default ``--image``),
each on its own project and serve, interleaved with the others in every repetition (each tree first in
turn): two checkouts (before and after a change) are compared in one run, against the same bare runs of
``--image``. Usage: ``python -m benchmarks.bench_warm_pool [--repeat N] [--rounds N] [--image TAG]
[--tree DIR[@IMAGE] ...] [--cpu]``; needs the Docker engine and a role image with the claim wait
(``roles/_claim.py``; the default is the configured one, ``roundtable-role:<version>``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import IO

import anyio

from benchmarks._cpu import CpuMeter
from benchmarks._engine_floor import EngineFloor
from capabilities.services import Services
from store import ProjectPaths, init_project, open_store
from store.config import package_version
from supervisor.cli._demo import DEMO_PATCH
from supervisor.cli._handoff import hand_off
from supervisor.cli._project import operator_call
from supervisor.launch import supervisor_id_for

_BATCH = 8
_HERE = Path(__file__).resolve().parents[1]


def _env(tree: Path) -> dict[str, str]:
    # PYTHONSAFEPATH: `python -m` would otherwise put the working directory first on the path, and a
    # benchmark started from a checkout would run that checkout's code for every --tree alike.
    return {**os.environ, "PYTHONPATH": str(tree), "PYTHONSAFEPATH": "1"}


def _configure(config: Path, image: str, pool: int) -> None:
    text = config.read_text()
    text = re.sub(r'(?m)^image = "roundtable-role:[^"]*"', f'image = "{image}"', text, count=1)
    text = re.sub(r"(?m)^warm_pool = \d+", f"warm_pool = {pool}", text)
    text = re.sub(
        r"(?m)^max_concurrent_launches = \d+", f"max_concurrent_launches = {max(pool, _BATCH)}", text
    )
    config.write_text(text)


async def _proposals(paths: ProjectPaths, count: int) -> list[str]:
    store = open_store(paths)
    try:
        services = Services(store=store)
        await operator_call(services, "memory.record", {
            "scope": "project", "kind": "decision", "title": "All SQL goes through the query builder",
            "body_md": "Never build SQL by hand.",
        })  # fmt: skip
        task = await operator_call(services, "task.create", {"title": "bench"})
        made = []
        for number in range(count):
            created = await operator_call(services, "proposal.create", {
                "task_id": task["task"]["id"], "agent_id": "implementer-1", "title": f"p{number}",
                "patch": DEMO_PATCH,
            })  # fmt: skip
            made.append(str(created["proposal"]["id"]))
        return made
    finally:
        store.close()


def _drain(stream: IO[str]) -> None:
    with contextlib.suppress(OSError, ValueError):
        for _ in stream:
            pass


@contextmanager
def _serve(root: Path, tree: Path) -> Iterator[subprocess.Popen[str]]:
    serve = subprocess.Popen(
        [sys.executable, "-m", "supervisor", "serve", "--root", str(root), "--port", "0"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True,
        env=_env(tree),
    )  # fmt: skip
    assert serve.stderr is not None
    try:
        for line in serve.stderr:
            if line.startswith("serving "):  # the banner's first line
                break
        else:
            raise SystemExit(f"roundtable serve ended (status {serve.wait()})")
        # Keep reading its log, so that a full pipe never blocks the serve.
        threading.Thread(target=_drain, args=(serve.stderr,), daemon=True).start()
        yield serve
    finally:
        serve.terminate()
        serve.wait(timeout=120)
        serve.stderr.close()


def _pool_ready(root: Path) -> int:
    answer = hand_off(root / ".roundtable", "pool.ready", {}, lambda *_: None)
    assert answer is not None, "no roundtable serve answered"
    return int(answer["ready"])


def _settled(root: Path, pool: int, timeout: float = 60.0) -> None:
    """Wait until the project's only containers are its pool's ``pool``, running (claimed ones removed,
    refills started: a serve that defers either until no launch runs has done it)."""
    label = f"label=roundtable.supervisor={supervisor_id_for(root)}"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        states = subprocess.run(
            ["docker", "ps", "-a", "--filter", label, "--format", "{{.State}} {{.Labels}}"],
            capture_output=True, text=True, check=True,
        ).stdout.split("\n")  # fmt: skip
        lines = list(filter(None, states))
        pooled = [line for line in lines if line.startswith("running ") and "roundtable.pool=" in line]
        if len(pooled) == len(lines) == pool:
            return
        time.sleep(0.05)  # the engine has no event for "nothing left to remove": poll it
    raise SystemExit("the serve's containers did not settle")


def _launch(root: Path, tree: Path, proposal_id: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "supervisor", "oracle", "launch", proposal_id, "--wait", "--json",
         "--root", str(root)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(tree),
    )  # fmt: skip


def _finish(proc: subprocess.Popen[str]) -> None:
    out, err = proc.communicate()
    answer = json.loads(out)
    if proc.returncode != 0 or answer["launch"]["status"] != "exited":
        raise SystemExit(f"a launch failed: {out[-500:]} {err[-1500:]}")
    if '"handed_off"' not in err:
        raise SystemExit("a launch was not handed to the serve")


def _timed(procs: list[subprocess.Popen[str]], started: float) -> float:
    for proc in procs:
        _finish(proc)
    return time.perf_counter() - started


def _bare(image: str) -> float:
    start = time.perf_counter()
    subprocess.run(
        ["docker", "run", "--rm", "--network", "none", image, "--version"], check=True, capture_output=True
    )
    return time.perf_counter() - start


class _Tree:
    """One source tree under test: its project, its proposals and its figures."""

    def __init__(self, tree: Path, image: str, root: Path, proposals: Iterator[str], pool: int):
        self.tree, self.image, self.root, self.proposals, self.pool = tree, image, root, proposals, pool
        self.warm: list[float] = []
        self.in_turn: list[float] = []
        self.at_once: list[float] = []
        self.cpu = CpuMeter({})
        self.floor = EngineFloor()

    def launch(self) -> subprocess.Popen[str]:
        return _launch(self.root, self.tree, next(self.proposals))

    def ready(self) -> None:
        """Wait until the serve has settled: its pool full, every container ready for a claim, nothing
        of an earlier launch left to remove (so no timed section meets another's background work)."""
        _pool_ready(self.root)
        _settled(self.root, self.pool)
        _pool_ready(self.root)


def _rounds(tree: _Tree) -> None:
    """8 launches one after another, then 8 at once, each from a full pool."""
    tree.ready()
    started = time.perf_counter()
    for _ in range(_BATCH):
        _finish(tree.launch())
    tree.in_turn.append(time.perf_counter() - started)
    tree.ready()
    with tree.cpu.measure():
        started = time.perf_counter()
        tree.at_once.append(_timed([tree.launch() for _ in range(_BATCH)], started))
    tree.ready()  # the round's refills and removals done: what the idle interval sees is not ours
    tree.floor.idle(tree.at_once[-1])


def _turn(trees: list[_Tree], number: int) -> list[_Tree]:
    """The trees in the order of repetition ``number``, each first in turn: the one that runs after
    another also meets the other's background work (its removals, its refills), so no tree always does."""
    shift = number % len(trees)
    return trees[shift:] + trees[:shift]


def main() -> None:
    """Run the benchmark and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=5, help="warm launches (and bare runs)")
    parser.add_argument("--rounds", type=int, default=2, help="rounds of 8 in turn / 8 at once")
    parser.add_argument("--image", default=f"roundtable-role:{package_version()}")
    parser.add_argument("--pool", type=int, default=_BATCH, help="[supervisor] warm_pool of the serve")
    parser.add_argument("--tree", action="append", help="DIR[@IMAGE]: a source tree (default: this one)")
    parser.add_argument("--cpu", action="store_true", help="where the CPU of the 8-at-once rounds went")
    args = parser.parse_args()
    bare: list[float] = []
    trees: list[_Tree] = []
    with tempfile.TemporaryDirectory(prefix="rt-bench-pool-", dir="/tmp") as tmp, ExitStack() as stack:
        for number, spec in enumerate(args.tree or [str(_HERE)]):
            source, _, image = spec.partition("@")
            root = Path(tmp) / f"proj{number}"
            paths, _ = init_project(root)
            _configure(paths.config_file, image or args.image, args.pool)
            needed = 1 + args.repeat + 2 * _BATCH * args.rounds
            made = iter(anyio.run(_proposals, paths, needed))
            trees.append(_Tree(Path(source).resolve(), image or args.image, root, made, args.pool))
        for tree in trees:
            tree.cpu.processes["serve"] = stack.enter_context(_serve(tree.root, tree.tree)).pid
        for tree in trees:
            tree.ready()
            _finish(tree.launch())  # a warm-up
        for number in range(args.repeat):
            bare.append(_bare(args.image))
            for tree in _turn(trees, number):
                tree.ready()
                started = time.perf_counter()
                tree.warm.append(_timed([tree.launch()], started))
        for number in range(args.rounds):
            for tree in _turn(trees, number):
                _rounds(tree)
    base = statistics.median(bare)
    print(f"bare docker run --rm --network none (--version)    median {base * 1000:8.1f} ms  (n={len(bare)})")
    for tree in trees:
        print(f"tree {tree.tree}, image {tree.image}")
        median = statistics.median(tree.warm)
        print(f"  warm oracle launch --wait, handed to serve       median {median * 1000:8.1f} ms  "
              f"x{median / base:5.2f} of the bare run (goal <= 0.5)")  # fmt: skip
        seq, par = statistics.median(tree.in_turn), statistics.median(tree.at_once)
        print(f"  {_BATCH} launches one after another (pool of {args.pool})   median {seq * 1000:8.1f} ms")
        print(f"  {_BATCH} launches at once                              median {par * 1000:8.1f} ms  "
              f"throughput x{seq / par:5.2f} (goal >= 3)")  # fmt: skip
        print("\n".join(tree.floor.report(tree.cpu.totals, _BATCH * len(tree.at_once), _BATCH, seq)))
        if args.cpu:
            print(f"  CPU per launch of the {_BATCH}-at-once rounds:")
            print("\n".join(tree.cpu.report(_BATCH * len(tree.at_once), indent="    ")))


if __name__ == "__main__":
    main()
