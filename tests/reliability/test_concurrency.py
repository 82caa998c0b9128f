"""N processes and N threads writing and reading at once: no lost update, no unhandled lock error.

SECURITY "The tests that prove it" 16. Shared counters are memory entries incremented through
``expected_revision`` (the HTTP API's optimistic lock, enforced in the ``UPDATE``): the final
revision of each must be 1 plus the number of increments that succeeded, and the revisions each
worker saw for an entry strictly increase. Votes cast concurrently on one proposal must leave a
consensus computed from exactly the counting votes (each agent's latest vote on the current
version).
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from store import ProjectPaths, Store, open_store
from tests.e2e.conftest import write_config
from tests.reliability.concurrency_worker import work
from tests.reliability.invariants import find_half_written, integrity, on_backend
from tests.reliability.summary import Summary, scaled
from tests.store.work_helpers import DIFF

REPO_ROOT = Path(__file__).resolve().parents[2]
WORKERS = 4
ROUNDS = 150


def _setup(project: ProjectPaths) -> tuple[Store, list[str], str]:
    # Three approvals needed from two reviewers: the round stays open, so votes keep flowing.
    write_config(project, {"[policy]required_approvals": "3"})
    store = open_store(project)
    counters = [
        store.memory.record(scope="project", kind="fact", title=f"counter {i}", body_md="0", actor="op").id
        for i in range(3)
    ]
    task = store.tasks.create(title="concurrent votes", actor="op")
    proposal, _ = store.proposals.create(
        task_id=task.id, agent_id="implementer-1", title="p", patch=DIFF, actor="implementer-1"
    )
    store.reviews.request_review(proposal_id=proposal["id"], actor="op")
    return store, counters, proposal["id"]


def _check(
    store: Store,
    project: ProjectPaths,
    counters: list[str],
    proposal_id: str,
    reports: list[dict[str, Any]],
    reliability: Summary,
    kind: str,
) -> None:
    errors = [e for r in reports for e in r["errors"]]
    succeeded = Counter(memory_id for r in reports for memory_id, _ in r["increments"])
    lost = 0
    for memory_id in counters:
        final = store.memory_admin.get(memory_id)["memory"]["revision"]
        lost += abs(final - 1 - succeeded[memory_id])
        revisions = [r["revision"] for r in store.memory_admin.revisions(memory_id)["items"]]
        assert revisions == list(range(1, final + 1)), revisions[:20]
    for report in reports:  # what one worker saw for an entry only goes up
        seen: dict[str, int] = {}
        for memory_id, revision in report["increments"]:
            assert revision > seen.get(memory_id, 0)
            seen[memory_id] = revision
    votes, consensus = store.reviews.list(proposal_id=proposal_id)
    current = store.proposals.get(proposal_id)["current_version"]
    latest: dict[str, Any] = {}
    for vote in votes:  # cast order: the last one of each agent on the current version counts
        if vote.patch_version == current:
            latest[vote.agent_id] = vote
    assert sorted(consensus["counting_vote_ids"]) == sorted(v.id for v in latest.values())
    assert consensus["approvals"] == sum(v.vote == "approve" for v in latest.values())
    assert {v.id for v in votes if v.counts} == {v.id for v in latest.values()}
    problems = integrity(project) + find_half_written(project)
    reliability.lost += lost
    reliability.problems += problems
    reliability.checks[on_backend(f"concurrency_{kind}")] += 1
    total = sum(succeeded.values())
    reliability.acknowledged["increment"] += total
    reliability.acknowledged["vote"] += sum(r["votes"] for r in reports)
    reliability.acknowledged["memory"] += sum(r["records"] for r in reports)
    reliability.concurrency[on_backend(kind)] = {
        "workers": len(reports),
        "increments": total,
        "conflicts_retried": sum(r["conflicts"] for r in reports),
        "votes": sum(r["votes"] for r in reports),
        "unexpected_errors": len(errors),
    }
    assert not errors, errors[:3]
    assert lost == 0, "lost updates"
    assert not problems, problems


@pytest.mark.slow
def test_processes_writing_at_once_lose_no_update(
    project: ProjectPaths, tmp_path: Path, reliability: Summary
) -> None:
    store, counters, proposal_id = _setup(project)
    try:
        outs = [tmp_path / f"w{i}.json" for i in range(WORKERS)]
        procs = [
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "tests.reliability.concurrency_worker",
                    str(project.root),
                    str(out),
                    str(i),
                    str(scaled(ROUNDS)),
                    proposal_id,
                    *counters,
                ],
                cwd=REPO_ROOT,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
            )
            for i, out in enumerate(outs)
        ]
        for proc in procs:
            assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
        started = time.monotonic()
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.write(b"go\n")
            proc.stdin.close()
        codes = [p.wait(timeout=300) for p in procs]
        for proc in procs:
            assert proc.stdout is not None
            proc.stdout.close()
        assert codes == [0] * WORKERS
        reports = [json.loads(out.read_text()) for out in outs]
        _check(store, project, counters, proposal_id, reports, reliability, "processes")
        reliability.concurrency[on_backend("processes")]["seconds"] = round(time.monotonic() - started, 2)
    finally:
        store.close()


def test_threads_sharing_a_store_lose_no_update(project: ProjectPaths, reliability: Summary) -> None:
    store, counters, proposal_id = _setup(project)
    try:
        reports: list[dict[str, Any]] = [{} for _ in range(WORKERS)]

        def run(i: int) -> None:
            reports[i] = work(
                store,
                counters=counters,
                proposal_id=proposal_id,
                rounds=scaled(ROUNDS),
                seed=100 + i,
                actor=f"thread-{i}",
            )

        threads = [threading.Thread(target=run, args=(i,)) for i in range(WORKERS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=300)
        assert not any(t.is_alive() for t in threads)
        _check(store, project, counters, proposal_id, reports, reliability, "threads")
    finally:
        store.close()
