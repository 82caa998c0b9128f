"""How fast the ``roundtable`` command starts: ``--help`` and light commands beside ``python -c pass``.

Each command runs as a whole new process, ``python -m supervisor ...`` (what the ``roundtable``
console script runs), with the same interpreter as the baseline ``python -c pass``; the commands
take turns within each round (baseline, then each command), so a machine that slows down part way
slows all of them alike. Printed: each command's median and p95 wall time, its ratio to the
baseline's median, and the median of its per-round ratios (the figure to quote on a noisy machine).

The light commands run against a scratch project made with ``roundtable init`` first, holding a
few memory entries and a task. ``oracle launch P --wait`` runs there too, handed to a stand-in
serve (this process, speaking the hand-off protocol on a private Unix socket and answering at
once: :class:`_StandInServe`), so its row is the quick path's own cost (start-up, imports,
hand-off, answer), what every launch handed to a real ``roundtable serve`` pays on top of the launch.

Compiled bytecode is cached, as for an installed copy: the commands run without
``PYTHONDONTWRITEBYTECODE`` and with ``PYTHONPYCACHEPREFIX`` in the scratch directory (so this
checkout gains no ``__pycache__``), and the warm-up round fills the cache. ``--no-bytecode-cache``
keeps the environment as it is, which on a machine with ``PYTHONDONTWRITEBYTECODE=1`` compiles
every module of ours on every run.

Usage: ``python -m benchmarks.bench_cli [--rounds N] [--no-bytecode-cache]``.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from benchmarks._timing import Timing
from supervisor.cli._handoff import SERVE_FILE, STATE_DIR

_REPO = Path(__file__).resolve().parent.parent


def _environment(pycache: Path | None) -> dict[str, str]:
    """This checkout first on the path, so the figures are this tree's, not an installed copy's;
    bytecode cached under ``pycache`` unless it is None."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(_REPO), env.get("PYTHONPATH")]))
    if pycache is not None:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(pycache)
    return env


def _run(argv: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, env=env, cwd=_REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


_LAUNCH_RESULT = {
    "id": "L-1",
    "status": "exited",
    "exit_code": 0,
    "reason": None,
    "error": None,
    "warnings": [],
}


class _StandInServe:
    """Answers every hand-off on ``root``'s project at once with an exited launch (no launch runs)."""

    def __init__(self, root: Path, private_dir: Path):
        private_dir.chmod(0o700)
        socket_path = private_dir / "handoff.sock"
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(str(socket_path))
        socket_path.chmod(0o600)
        self.sock.listen()
        file = root / STATE_DIR / SERVE_FILE
        file.write_text(json.dumps({"socket": str(socket_path), "pid": os.getpid()}))
        file.chmod(0o600)
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:  # closed: the benchmark is over
                return
            with conn, conn.makefile("rwb") as stream:
                stream.readline()
                for line in ({"accepted": True}, {"result": _LAUNCH_RESULT}):
                    stream.write(json.dumps(line).encode() + b"\n")
                stream.flush()

    def close(self) -> None:
        """Stop accepting hand-offs."""
        self.sock.close()


def _commands(root: Path) -> dict[str, list[str]]:
    cli = [sys.executable, "-m", "supervisor"]
    handed = [*cli, "oracle", "launch", "P-1", "--wait", "--json", "--root", str(root)]
    return {
        "python -c pass (baseline)": [sys.executable, "-c", "pass"],
        "roundtable --help": [*cli, "--help"],
        "roundtable task --help": [*cli, "task", "--help"],
        "roundtable init": [*cli, "init", "--root", str(root)],
        "roundtable memory query": [*cli, "memory", "query", "rule", "--root", str(root)],
        "roundtable task list": [*cli, "task", "list", "--root", str(root)],
        "roundtable oracle launch P --wait (handed off)": handed,
    }


def _scratch_project(root: Path, env: dict[str, str]) -> None:
    cli = [sys.executable, "-m", "supervisor"]
    _run([*cli, "init", "--root", str(root)], env)
    for index in range(5):
        _run(
            [
                *cli,
                "memory",
                "record",
                "--scope",
                "project",
                "--kind",
                "decision",
                "--title",
                f"Rule {index}",
                "--body",
                f"rule number {index}",
                "--root",
                str(root),
            ],
            env,
        )
    _run([*cli, "task", "create", "--title", "A task", "--root", str(root)], env)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=21, help="runs of each command (after one warm-up)")
    parser.add_argument(
        "--no-bytecode-cache", action="store_true", help="run with the environment's bytecode settings"
    )
    options = parser.parse_args()
    # The stand-in's socket lives in a short private directory of its own (a socket path is short).
    with (
        tempfile.TemporaryDirectory(prefix="rt-bench-cli-") as scratch,
        tempfile.TemporaryDirectory(
            prefix="rt-",
            dir="/tmp",
        ) as sockets,
    ):
        root = Path(scratch) / "proj"
        root.mkdir()
        env = _environment(None if options.no_bytecode_cache else Path(scratch) / "pycache")
        _scratch_project(root, env)
        serve = _StandInServe(root, Path(sockets))
        commands = _commands(root)
        samples: dict[str, list[float]] = {label: [] for label in commands}
        for round_index in range(options.rounds + 1):
            for label, argv in commands.items():
                seconds = _run(argv, env)
                if round_index:  # the first round is the warm-up
                    samples[label].append(seconds)
        serve.close()
    baseline_label = next(iter(commands))
    baseline = Timing(baseline_label, samples[baseline_label])
    cache = "environment's bytecode settings" if options.no_bytecode_cache else "bytecode cached"
    print(f"python {sys.version.split()[0]}, {options.rounds} rounds in turn, {cache}")
    print(baseline.line())
    for label in list(commands)[1:]:
        timing = Timing(label, samples[label])
        paired = statistics.median(a / b for a, b in zip(samples[label], baseline.samples, strict=True))
        print(f"{timing.line(baseline)}   paired x{paired:6.2f}")


if __name__ == "__main__":
    main()
