"""Role image, new beside old: size, ``docker run --rm`` start-up, and the runner's own start-up.

Compares two role images (by default the current ``roundtable-role:<version>`` and one tagged
``roundtable-role:before-lean``, for instance the image built from an older checkout and retagged):

* the image size, from ``docker image inspect``;
* ``docker run --rm --entrypoint python IMAGE -c pass`` and ``docker run --rm IMAGE --version`` (the
  runner's entry point), wall time of each run;
* inside a container run read-only as a launch is: the wall time of fresh interpreters doing
  ``pass``, ``import roles.runner``, ``python -m roles.runner --version`` and the imports of a launch
  (every ``roles`` module and the MCP client), ``-X importtime`` of ``import roles.runner``, and the
  number of modules a launch loads.

Every repetition measures both images, in an order that swaps each time, so that drift on a shared
machine hits both alike.

Prints medians and p95, and every figure of the new image as a ratio of the old one.
Usage: ``python -m benchmarks.bench_image [--repeat N] [--new TAG] [--old TAG]``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import time
from collections import defaultdict
from dataclasses import dataclass

from benchmarks._timing import Timing, percentile
from store.config import package_version

_PYTHON = "/opt/roundtable/venv/bin/python"
_HARDENING = ("--read-only", "--tmpfs", "/tmp:rw,noexec,nosuid,nodev,size=64m", "--network", "none")

# Runs inside the container: times fresh interpreters (after one untimed pass), prints one JSON object.
_IN_CONTAINER = r"""
import json, re, subprocess, sys, time
repeat = int(sys.argv[1])
py = sys.executable
launch = (
    "import importlib, pkgutil, roles\n"
    "for m in pkgutil.walk_packages(roles.__path__, 'roles.'): importlib.import_module(m.name)\n"
    "import mcp.client.streamable_http\nfrom mcp import Client"
)
cases = {
    "python -c pass": [py, "-c", "pass"],
    "python -c 'import roles.runner'": [py, "-c", "import roles.runner"],
    "python -m roles.runner --version": [py, "-m", "roles.runner", "--version"],
    "imports of a launch (roles/**, mcp client)": [py, "-c", launch],
}
samples = {name: [] for name in cases}
for argv in cases.values():
    subprocess.run(argv, check=True, capture_output=True)
for _ in range(repeat):
    for name, argv in cases.items():
        start = time.perf_counter()
        subprocess.run(argv, check=True, capture_output=True)
        samples[name].append(time.perf_counter() - start)
trace = subprocess.run([py, "-X", "importtime", "-c", "import roles.runner"], capture_output=True, text=True)
line = re.search(r"^import time:\s+\d+ \|\s+(\d+) \| roles\.runner$", trace.stderr, re.M)
count = launch + "\nimport sys; print(len(sys.modules))"
modules = subprocess.run([py, "-c", count], capture_output=True, text=True)
print(json.dumps({
    "samples": samples,
    "importtime_roles_runner_us": int(line[1]) if line else 0,
    "modules_of_a_launch": int(modules.stdout.split()[-1]),
}))
"""


def _size(tag: str) -> int:
    out = subprocess.run(
        ["docker", "image", "inspect", "-f", "{{.Size}}", tag], capture_output=True, text=True, check=False
    )
    if out.returncode != 0:
        raise SystemExit(f"no image {tag}: {out.stderr.strip()}")
    return int(out.stdout)


def _timed(argv: list[str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed: {proc.stderr.strip()}")
    return elapsed


def _docker_runs(tag: str) -> dict[str, list[str]]:
    return {
        "docker run --rm IMAGE python -c pass":
            ["docker", "run", "--rm", "--entrypoint", _PYTHON, tag, "-c", "pass"],
        "docker run --rm IMAGE --version (the runner)": ["docker", "run", "--rm", tag, "--version"],
    }  # fmt: skip


@dataclass(frozen=True)
class _Inside:
    """What the in-container probe reports for one image."""

    samples: dict[str, list[float]]
    importtime_roles_runner_us: int
    modules_of_a_launch: int


def _inside(tag: str, repeat: int) -> _Inside:
    argv = ["docker", "run", "--rm", *_HARDENING, "--entrypoint", _PYTHON, tag, "-c", _IN_CONTAINER]
    proc = subprocess.run([*argv, str(repeat)], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"the in-container probe failed on {tag}: {proc.stderr.strip()}")
    return _Inside(**json.loads(proc.stdout))


def _compare(label: str, new: Timing, old: Timing) -> str:
    return (
        f"  {label:<46} new {new.median * 1000:8.1f} ms (p95 {percentile(new.samples, 95) * 1000:7.1f})"
        f"   old {old.median * 1000:8.1f} ms (p95 {percentile(old.samples, 95) * 1000:7.1f})"
        f"   new/old x{new.median / old.median:5.2f}"
    )


def run(new: str, old: str, repeat: int) -> None:
    """Measure both images, interleaved (the order swapping every repetition), and print the comparison."""
    images = {"new": new, "old": old}
    sizes = {key: _size(tag) for key, tag in images.items()}
    samples: dict[str, dict[str, list[float]]] = {key: defaultdict(list) for key in images}
    inside: dict[str, _Inside] = {}
    for tag in images.values():  # warm-up: page both images in
        for argv in _docker_runs(tag).values():
            _timed(argv)
    for index in range(repeat):
        for key in sorted(images, reverse=index % 2 == 1):
            for label, argv in _docker_runs(images[key]).items():
                samples[key][label].append(_timed(argv))
            probe = _inside(images[key], 1)
            for label, values in probe.samples.items():
                samples[key][label].extend(values)
            inside[key] = probe

    print(f"role image, new {new} vs old {old}, {repeat} interleaved repetitions")
    print(
        f"  {'image size':<46} new {sizes['new'] / 1e6:8.1f} MB"
        f"                 old {sizes['old'] / 1e6:8.1f} MB"
        f"                 new/old x{sizes['new'] / sizes['old']:5.2f}"
    )
    for index, label in enumerate(samples["new"]):
        if index == len(_docker_runs(new)):
            print("inside the container (fresh interpreters, read-only root filesystem):")
        print(_compare(label, Timing(label, samples["new"][label]), Timing(label, samples["old"][label])))
    counts = {
        "-X importtime, import roles.runner (us)": (
            inside["new"].importtime_roles_runner_us,
            inside["old"].importtime_roles_runner_us,
        ),
        "modules loaded by the imports of a launch": (
            inside["new"].modules_of_a_launch,
            inside["old"].modules_of_a_launch,
        ),
    }
    for label, (new_value, old_value) in counts.items():
        ratio = new_value / old_value
        print(f"  {label:<46} new {new_value:8d}   old {old_value:8d}   new/old x{ratio:5.2f}")


def main() -> None:
    """Parse arguments and run the benchmark."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--new", default=f"roundtable-role:{package_version()}")
    parser.add_argument("--old", default="roundtable-role:before-lean")
    args = parser.parse_args()
    run(args.new, args.old, args.repeat)


if __name__ == "__main__":
    main()
