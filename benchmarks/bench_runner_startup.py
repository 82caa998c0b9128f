"""The runner's start-up inside the role container, beside ``python -c pass`` in the same container.

One ``docker run`` of the image (hardened as a launch is: read-only root, a tmpfs on ``/tmp``, no
network, the image's non-root user) runs a stdlib-only script that times, interleaved, ``--rounds``
times each:

* ``python -c pass``: the baseline, the interpreter's own start-up in this image;
* ``python -m roles.runner --version``;
* ``python -m roles.runner`` against a Unix socket the script listens on in ``/tmp``: the time from
  starting the process to the first byte of its first MCP request (its imports and connection set-up),
  and to its exit (the script answers that request 401, so the runner ends "no grant").

``--image TAG`` (repeatable) measures several images in alternation, one container each per
repetition, so two builds are compared in the same run. Usage:
``python -m benchmarks.bench_runner_startup [--image TAG ...] [--repeat N] [--rounds N]``; needs the
Docker engine and the role image.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
from collections import defaultdict

from store.config import package_version

_SCRIPT = r"""
import json, os, socket, subprocess, sys, threading, time
python = sys.executable
rounds = int(sys.argv[1])
sock_path = "/tmp/bench.sock"
token = "/tmp/token"
with open(token, "w") as f:
    f.write("rt_cap_bench")
server = socket.socket(socket.AF_UNIX)
server.bind(sock_path)
server.listen(8)
arrived = []

def serve():
    while True:
        conn, _ = server.accept()
        with conn:
            conn.recv(65536)
            arrived.append(time.perf_counter())
            conn.sendall(b"HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")

threading.Thread(target=serve, daemon=True).start()
runner = [python, "-m", "roles.runner", "--socket", sock_path, "--token-file", token]
out = {"pass": [], "version": [], "first_request": [], "refused_exit": []}
for _ in range(rounds):
    start = time.perf_counter()
    subprocess.run([python, "-c", "pass"], check=True)
    out["pass"].append(time.perf_counter() - start)
    start = time.perf_counter()
    subprocess.run([python, "-m", "roles.runner", "--version"], check=True, stdout=subprocess.DEVNULL)
    out["version"].append(time.perf_counter() - start)
    before = len(arrived)
    start = time.perf_counter()
    done = subprocess.run(runner, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    out["refused_exit"].append(time.perf_counter() - start)
    assert done.returncode == 3, done.returncode
    out["first_request"].append(arrived[before] - start)
print(json.dumps(out))
"""

_ROWS = (
    ("pass", "python -c pass (baseline)"),
    ("version", "python -m roles.runner --version"),
    ("first_request", "the runner: start to its first MCP request"),
    ("refused_exit", "the runner: start to exit (token refused)"),
)


def _measure(image: str, rounds: int) -> dict[str, list[float]]:
    done = subprocess.run(
        ["docker", "run", "--rm", "--read-only", "--tmpfs", "/tmp", "--network", "none",
         "--entrypoint", "/opt/roundtable/venv/bin/python", image, "-c", _SCRIPT, str(rounds)],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    measured: dict[str, list[float]] = json.loads(done.stdout)
    return measured


def main() -> None:
    """Run the benchmark and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--image", action="append", help="a role image (default: the version's)")
    parser.add_argument("--repeat", type=int, default=3, help="containers per image")
    parser.add_argument("--rounds", type=int, default=5, help="rounds per container")
    args = parser.parse_args()
    images: list[str] = args.image or [f"roundtable-role:{package_version()}"]
    figures: dict[str, dict[str, list[float]]] = {image: defaultdict(list) for image in images}
    for _ in range(args.repeat):
        for image in images:
            for key, values in _measure(image, args.rounds).items():
                figures[image][key] += values
    for image in images:
        base = statistics.median(figures[image]["pass"])
        print(f"in a container of {image} (n={len(figures[image]['pass'])} each)")
        for key, label in _ROWS:
            median = statistics.median(figures[image][key])
            print(f"  {label:<44} median {median * 1000:7.1f} ms  x{median / base:5.2f} of python -c pass")


if __name__ == "__main__":
    main()
