"""Where a cold ``roundtable oracle launch P --wait`` spends its time, beside a bare ``docker run``.

Each repetition runs, interleaved so drift on a shared machine hits both alike:

* ``docker run --rm --network none IMAGE --version``: the baseline, the engine's floor;
* ``roundtable oracle launch P --wait --json`` on a fresh proposal of the demo's kind, as a user
  runs it: a new process, the CLI's imports, the supervisor's start (owner lock, reaping), the
  launch (grant, runtime directory, socket, container create/start, the runner, the oracle's
  tool calls, removal) and the answer.

It then splits the launch's wall time by the progress lines the command prints (JSON, one per
phase, with the time since the process started): start-up until ``requested`` (imports, store,
supervisor start), ``requested`` to ``running`` (grant, socket, create, start), ``running`` to
``stopped`` (the runner in the container: its imports, the MCP handshake, the judge's calls),
``stopped`` to ``ended`` (inspect, logs, remove), ``ended`` to the answer (warnings, clean-up),
and prints the medians, with the command's own CPU time (user and system, from ``wait4``: a
figure a loaded machine changes less than wall times). ``--variant IMAGE[@TREE]`` (repeatable)
runs the launch once per variant in each repetition, each in its own project whose
``[roles.memory_oracle] image`` is ``IMAGE``, with the CLI of the source tree ``TREE`` (default:
this one) on ``PYTHONPATH``: two builds of the role image and two checkouts (say, before and after
a change) are compared in the same run against the bare runs. Each variant's ratios are to the
bare ``--version`` run of its own image, measured in the same repetitions; a bare ``docker run
--rm`` of ``python -c pass`` in each image is printed beside.
Usage: ``python -m benchmarks.bench_oracle_cli [--repeat N] [--variant IMAGE[@TREE] ...]``; needs
the Docker engine and the role image(s).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from store.config import package_version
from supervisor.cli._demo import DEMO_PATCH

_SEGMENTS = (
    ("start-up: imports, store, supervisor start", None, "requested"),
    ("grant, runtime dir, socket, create, start", "requested", "running"),
    ("the container runs (runner, MCP, judge)", "running", "stopped"),
    ("inspect, logs, remove", "stopped", "ended"),
    ("warnings, clean-up, answer", "ended", None),
)
_HERE = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class _Variant:
    """A role image and the source tree whose CLI launches it."""

    image: str
    tree: Path

    @property
    def label(self) -> str:
        return f"image {self.image}, tree {self.tree}"

    def command(self, *argv: str) -> tuple[list[str], dict[str, str]]:
        # PYTHONSAFEPATH: ``-m`` would put the working directory first, and from a checkout every
        # variant would run that checkout's tree, whatever its PYTHONPATH says.
        env = {**os.environ, "PYTHONPATH": str(self.tree), "PYTHONSAFEPATH": "1"}
        return [sys.executable, "-m", "supervisor", *argv], env


def _cli(variant: _Variant, root: Path, *argv: str) -> dict[str, object]:
    command, env = variant.command(*argv, "--root", str(root), "--json")
    done = subprocess.run(command, check=True, capture_output=True, text=True, env=env)
    answer: dict[str, object] = json.loads(done.stdout)
    return answer


def _proposal(variant: _Variant, root: Path, patch: Path, task_id: str) -> str:
    created = _cli(variant, root, "proposal", "create", "--task", task_id, "--agent", "implementer-1",
                   "--title", "raw sql", "--patch", str(patch))  # fmt: skip
    proposal = created["proposal"]
    assert isinstance(proposal, dict)
    return str(proposal["id"])


def _timed_launch(variant: _Variant, root: Path, proposal_id: str) -> tuple[float, dict[str | None, float]]:
    """The wall time of one ``oracle launch --wait`` process, and when each phase line appeared."""
    command, env = variant.command("oracle", "launch", proposal_id, "--wait", "--root", str(root))
    start = time.perf_counter()
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    assert proc.stderr is not None
    seen: dict[str | None, float] = {}
    for line in proc.stderr:  # "[  0.27s] running        L-..." as each phase happens
        if line.startswith("[") and "]" in line:
            words = line.split("]", 1)[1].split()
            if words:
                seen.setdefault(words[0], time.perf_counter() - start)
    _, status, usage = os.wait4(proc.pid, 0)  # the process's own CPU, robust to a loaded machine
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"oracle launch {proposal_id} failed")
    seen["cpu"] = usage.ru_utime + usage.ru_stime
    return time.perf_counter() - start, seen


def _project(variant: _Variant, root: Path) -> str:
    """A project at ``root`` whose oracle runs the variant's image, with one decision; its task's ID."""
    root.mkdir()
    _cli(variant, root, "init")
    config = root / ".roundtable" / "config.toml"
    default = f'image = "roundtable-role:{package_version()}"'
    config.write_text(config.read_text().replace(default, f'image = "{variant.image}"', 1))
    title = "All SQL goes through the query builder"
    _cli(variant, root, "memory", "record", "--scope", "project", "--kind", "decision",
         "--title", title, "--body", "Never build SQL by hand.")  # fmt: skip
    task = _cli(variant, root, "task", "create", "--title", "bench")["task"]
    assert isinstance(task, dict)
    return str(task["id"])


def _report(variant: _Variant, launch: list[float], segments: dict[str, list[float]], base: float) -> None:
    median = statistics.median(launch)
    print(f"roundtable oracle launch --wait (a new process), {variant.label}")
    print(
        f"  {'the whole command':<46} median {median * 1000:8.1f} ms  x{median / base:5.2f} of its bare run"
    )
    cpu = statistics.median(segments["cpu"])
    print(f"  {'its CPU time (user + system)':<46} median {cpu * 1000:8.1f} ms")
    for label, _, _ in _SEGMENTS:
        if segments[label]:
            part = statistics.median(segments[label])
            print(f"  {label:<46} median {part * 1000:8.1f} ms  x{part / base:5.2f} of its bare run")


def _variant(text: str) -> _Variant:
    image, _, tree = text.partition("@")
    return _Variant(image, Path(tree).resolve() if tree else _HERE)


def _timed(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True)
    return time.perf_counter() - start


def main() -> None:
    """Run the benchmark and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument(
        "--variant", action="append", type=_variant, help="IMAGE[@TREE] (default: this tree's)"
    )
    args = parser.parse_args()
    variants: list[_Variant] = args.variant or [_Variant(f"roundtable-role:{package_version()}", _HERE)]
    images = sorted({v.image for v in variants})
    bare: dict[str, list[float]] = defaultdict(list)
    bare_pass: dict[str, list[float]] = defaultdict(list)
    launch: dict[_Variant, list[float]] = defaultdict(list)
    segments: dict[_Variant, dict[str, list[float]]] = {v: defaultdict(list) for v in variants}
    docker_run = ["docker", "run", "--rm", "--network", "none"]
    python = ["--entrypoint", "/opt/roundtable/venv/bin/python"]
    with tempfile.TemporaryDirectory(prefix="rt-bench-cli-") as tmp:
        patch = Path(tmp) / "demo.patch"
        patch.write_text(DEMO_PATCH)
        projects = {v: Path(tmp) / f"proj{n}" for n, v in enumerate(variants)}
        tasks = {v: _project(v, root) for v, root in projects.items()}
        for index in range(args.repeat + 1):  # the first is a warm-up
            for image in images:
                bare_s = _timed([*docker_run, image, "--version"])
                pass_s = _timed([*docker_run, *python, image, "-c", "pass"])
                if index:
                    bare[image].append(bare_s)
                    bare_pass[image].append(pass_s)
            for variant, root in projects.items():
                launch_s, marks = _timed_launch(
                    variant, root, _proposal(variant, root, patch, tasks[variant])
                )
                if not index:
                    continue
                launch[variant].append(launch_s)
                segments[variant]["cpu"].append(marks["cpu"])
                for label, begin, end in _SEGMENTS:
                    began = 0.0 if begin is None else marks.get(begin)
                    stop = launch_s if end is None else marks.get(end)
                    if began is not None and stop is not None:
                        segments[variant][label].append(stop - began)
    for image in images:
        print(f"bare docker run --rm --network none {image}: --version median "
              f"{statistics.median(bare[image]) * 1000:.1f} ms, python -c pass median "
              f"{statistics.median(bare_pass[image]) * 1000:.1f} ms (n={len(bare[image])})")  # fmt: skip
    for variant in variants:
        _report(variant, launch[variant], segments[variant], statistics.median(bare[variant.image]))


if __name__ == "__main__":
    main()
