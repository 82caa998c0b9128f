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
and prints the medians. ``--image TAG`` (repeatable) runs the launch once per image in each
repetition, each in its own project whose ``[roles.memory_oracle] image`` names it, so two builds of
the role image (say, before and after a change) are compared in the same run against the same bare
run of ``roundtable-role:<version>``. Usage: ``python -m benchmarks.bench_oracle_cli [--repeat N]
[--image TAG ...]``; needs the Docker engine and the role image(s).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
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


def _cli(root: Path, *argv: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-m", "supervisor", *argv, "--root", str(root), "--json"],
        check=True,
        capture_output=True,
        text=True,
    )
    answer: dict[str, object] = json.loads(done.stdout)
    return answer


def _proposal(root: Path, patch: Path, task_id: str) -> str:
    created = _cli(root, "proposal", "create", "--task", task_id, "--agent", "implementer-1",
                   "--title", "raw sql", "--patch", str(patch))  # fmt: skip
    proposal = created["proposal"]
    assert isinstance(proposal, dict)
    return str(proposal["id"])


def _timed_launch(root: Path, proposal_id: str) -> tuple[float, dict[str | None, float]]:
    """The wall time of one ``oracle launch --wait`` process, and when each phase line appeared."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "supervisor", "oracle", "launch", proposal_id, "--wait", "--root", str(root)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stderr is not None
    seen: dict[str | None, float] = {}
    for line in proc.stderr:  # "[  0.27s] running        L-..." as each phase happens
        if line.startswith("[") and "]" in line:
            words = line.split("]", 1)[1].split()
            if words:
                seen.setdefault(words[0], time.perf_counter() - start)
    if proc.wait() != 0:
        raise SystemExit(f"oracle launch {proposal_id} failed")
    return time.perf_counter() - start, seen


def _project(root: Path, patch: Path, image: str) -> str:
    """A project at ``root`` whose oracle runs ``image``, with one decision; its task's ID."""
    root.mkdir()
    _cli(root, "init")
    config = root / ".roundtable" / "config.toml"
    default = f'image = "roundtable-role:{package_version()}"'
    config.write_text(config.read_text().replace(default, f'image = "{image}"', 1))
    title = "All SQL goes through the query builder"
    _cli(root, "memory", "record", "--scope", "project", "--kind", "decision",
         "--title", title, "--body", "Never build SQL by hand.")  # fmt: skip
    task = _cli(root, "task", "create", "--title", "bench")["task"]
    assert isinstance(task, dict)
    return str(task["id"])


def _report(image: str, launch: list[float], segments: dict[str, list[float]], base: float) -> None:
    median = statistics.median(launch)
    print(f"roundtable oracle launch --wait, image {image} (a new process)")
    print(f"  {'the whole command':<46} median {median * 1000:8.1f} ms  x{median / base:5.2f} of bare run")
    for label, _, _ in _SEGMENTS:
        if segments[label]:
            part = statistics.median(segments[label])
            print(f"  {label:<46} median {part * 1000:8.1f} ms  x{part / base:5.2f} of bare run")


def main() -> None:
    """Run the benchmark and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--image", action="append", help="a role image to launch (default: the version's)")
    args = parser.parse_args()
    default_image = f"roundtable-role:{package_version()}"
    images: list[str] = args.image or [default_image]
    bare: list[float] = []
    launch: dict[str, list[float]] = defaultdict(list)
    segments: dict[str, dict[str, list[float]]] = {image: defaultdict(list) for image in images}
    with tempfile.TemporaryDirectory(prefix="rt-bench-cli-") as tmp:
        patch = Path(tmp) / "demo.patch"
        patch.write_text(DEMO_PATCH)
        projects = {image: (Path(tmp) / f"proj{n}", "") for n, image in enumerate(images)}
        for image, (root, _) in projects.items():
            projects[image] = (root, _project(root, patch, image))
        for index in range(args.repeat + 1):  # the first is a warm-up
            start = time.perf_counter()
            subprocess.run(["docker", "run", "--rm", "--network", "none", default_image, "--version"],
                           check=True, capture_output=True)  # fmt: skip
            bare_s = time.perf_counter() - start
            for image, (root, task_id) in projects.items():
                launch_s, marks = _timed_launch(root, _proposal(root, patch, task_id))
                if not index:
                    continue
                launch[image].append(launch_s)
                for label, begin, end in _SEGMENTS:
                    began = 0.0 if begin is None else marks.get(begin)
                    stop = launch_s if end is None else marks.get(end)
                    if began is not None and stop is not None:
                        segments[image][label].append(stop - began)
            if index:
                bare.append(bare_s)
    base = statistics.median(bare)
    print(f"bare docker run --rm --network none {default_image} --version: median {base * 1000:.1f} ms"
          f" (n={len(bare)})")  # fmt: skip
    for image in images:
        _report(image, launch[image], segments[image], base)


if __name__ == "__main__":
    main()
