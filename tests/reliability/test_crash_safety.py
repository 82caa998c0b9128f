"""SIGKILL at random points of every write path, many times; after each kill nothing acknowledged is lost.

SECURITY "The tests that prove it" 17. A child process (:mod:`tests.reliability.crash_worker`) writes
memory entries and revisions, proposals with patch versions, review rounds, votes, grants and
launch records to one project, logging each acknowledged write with fsync before it continues. The
test kills it at a random moment, then checks the project as a restarted process would see it:
``PRAGMA integrity_check`` is ``ok``, every acknowledged write is there, and no half-written state
exists (see :mod:`tests.reliability.invariants`). The next child continues on the same project, so
later kills land on a database that already survived earlier ones.
"""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from store import ProjectPaths
from tests.reliability.invariants import (
    backend,
    find_half_written,
    find_missing,
    integrity,
    on_backend,
    read_acks,
)
from tests.reliability.summary import Summary, scaled

REPO_ROOT = Path(__file__).resolve().parents[2]
KILLS = 40
KILLS_POSTGRES = 12  # each child opens a pool to the server first: fewer, to keep the run short
_KINDS = frozenset({"memory", "revision", "proposal", "patch", "vote", "grant", "launch"})
"""The kinds of write the workload must have had acknowledged for the run to prove anything."""


def _run_and_kill(paths: ProjectPaths, acklog: Path, rng: random.Random) -> None:
    child = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.reliability.crash_worker",
            str(paths.root),
            str(acklog),
            str(rng.randrange(2**31)),
        ],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert child.stdout is not None
        line = child.stdout.readline()
        assert line == b"ready\n", (line, child.stderr.read() if child.stderr else b"")
        # The kill point: a random moment inside the workload (this delay is the experiment, not a wait).
        time.sleep(rng.uniform(0.0, 0.25))
        assert child.poll() is None, child.stderr.read() if child.stderr else b""
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        for stream in (child.stdout, child.stderr):
            if stream is not None:
                stream.close()


def test_sigkill_at_random_points_loses_no_acknowledged_write(
    project: ProjectPaths, tmp_path: Path, reliability: Summary
) -> None:
    rng = random.Random()
    acklog = tmp_path / "acks.jsonl"
    kills = scaled(KILLS if backend() == "sqlite" else KILLS_POSTGRES)
    problems: list[str] = []
    lost: list[str] = []
    crashes = 0
    # Every kill is checked; past the planned kills the run goes on (to 4 times as many) until the
    # workload has acknowledged every kind of write at least once: its ops are drawn at random and a
    # slow machine's children do few each, so 12 kills could miss one kind (a patch needs a pending
    # proposal first) and prove nothing about it.
    while crashes < kills or (_KINDS - {ack["op"] for ack in read_acks(acklog)} and crashes < 4 * kills):
        crashes += 1
        _run_and_kill(project, acklog, rng)
        reliability.crashes += 1
        problems += integrity(project)
        lost = find_missing(project, read_acks(acklog))
        problems += find_half_written(project)
        reliability.checks[on_backend("after_kill")] += 1
        if problems or lost:
            break
    acks = read_acks(acklog)
    for ack in acks:
        reliability.acknowledged[ack["op"]] += 1
    reliability.lost += len(lost)
    reliability.problems += problems
    assert not lost, f"acknowledged writes missing after a kill: {lost[:10]}"
    assert not problems, problems[:10]
    assert len(acks) > kills, "the workload acknowledged too little to prove anything"
    kinds = {ack["op"] for ack in acks}
    assert kinds >= _KINDS, kinds
