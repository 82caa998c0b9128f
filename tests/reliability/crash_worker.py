"""The child of the crash-safety test: runs write workloads until it is SIGKILLed.

``python -m tests.reliability.crash_worker ROOT ACKLOG SEED``. After each write's commit returns,
it appends one JSON line to ACKLOG and fsyncs it before doing anything else: a line in the log is
a write the store acknowledged. It prints ``ready`` once the store is open, so the parent's random
kill lands in the workload, not in interpreter start-up.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import sqlite3
import sys
from pathlib import Path
from typing import Any

from store import ProjectPaths, RoundtableError, Store, open_store
from store.launches._store import LaunchStatus

_ACTOR = "crash-worker"


class _Acks:
    def __init__(self, path: Path):
        self.fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)

    def ack(self, **fields: Any) -> None:
        os.write(self.fd, (json.dumps(fields) + "\n").encode())
        os.fsync(self.fd)


def _diff(n: int) -> str:
    body = "".join(f"+line {i} of change {n}\n" for i in range(1 + n % 7))
    count = 1 + n % 7
    return (
        f"diff --git a/crash/f{n}.txt b/crash/f{n}.txt\nnew file mode 100644\n--- /dev/null\n"
        f"+++ b/crash/f{n}.txt\n@@ -0,0 +1,{count} @@\n{body}"
    )


def _pick(store: Store, sql: str) -> sqlite3.Row | None:
    row: sqlite3.Row | None = store.db.read(lambda conn: conn.execute(sql).fetchone())
    return row


class _Workload:
    def __init__(self, store: Store, acks: _Acks, rng: random.Random):
        self.store, self.acks, self.rng = store, acks, rng
        self.n = rng.randrange(10**9)
        task = store.tasks.create(title="crash workload", actor=_ACTOR)
        acks.ack(op="task", id=task.id)
        self.task_id = task.id

    def step(self) -> None:
        self.n += 1
        op = self.rng.choice(
            [
                self.memory,
                self.memory,
                self.revise,
                self.proposal,
                self.attach,
                self.vote,
                self.grant,
                self.launch,
            ]
        )
        # A refused write (a lost race with state, say) acknowledges nothing.
        with contextlib.suppress(RoundtableError):
            op()

    def memory(self) -> None:
        entry = self.store.memory.record(
            scope="project",
            kind="fact",
            title=f"fact {self.n}",
            body_md="x" * self.rng.randrange(1, 4000),
            actor=_ACTOR,
        )
        self.acks.ack(op="memory", id=entry.id, revision=entry.revision)

    def revise(self) -> None:
        row = _pick(self.store, "SELECT id, revision FROM memory_entries ORDER BY random() LIMIT 1")
        if row is None:
            return
        body = {"body_md": f"revised {self.n}", "expected_revision": int(row["revision"])}
        done = self.store.memory_admin.revise(row["id"], body, actor=_ACTOR)
        self.acks.ack(op="revision", id=row["id"], revision=done.body["revision"]["revision"])

    def proposal(self) -> None:
        view, version = self.store.proposals.create(
            task_id=self.task_id,
            agent_id="implementer-1",
            title=f"change {self.n}",
            patch=_diff(self.n),
            actor=_ACTOR,
        )
        self.acks.ack(op="proposal", id=view["id"], version=version.version)
        self.store.reviews.request_review(proposal_id=view["id"], actor=_ACTOR)
        self.acks.ack(op="review", id=view["id"])

    def attach(self) -> None:
        row = _pick(
            self.store, "SELECT id FROM proposals WHERE status IN ('pending', 'in_review') ORDER BY random()"
        )
        if row is None:
            return
        _, version, _ = self.store.proposals.attach_patch(
            proposal_id=row["id"], patch=_diff(self.n), actor=_ACTOR
        )
        self.acks.ack(op="patch", id=row["id"], version=version.version)

    def vote(self) -> None:
        row = _pick(
            self.store, "SELECT proposal_id FROM review_rounds WHERE status = 'open' ORDER BY random()"
        )
        if row is None:
            return
        result = self.store.reviews.cast(
            proposal_id=row["proposal_id"],
            agent_id=self.rng.choice(["reviewer-1", "reviewer-2"]),
            vote=self.rng.choice(["approve", "abstain", "approve"]),
            reason_md="crash workload",
            actor=_ACTOR,
        )
        self.acks.ack(op="vote", id=result.vote.id)

    def grant(self) -> None:
        row = _pick(self.store, "SELECT id FROM proposals ORDER BY random()")
        if row is None:
            return
        issued = self.store.grants.mint_grant(
            proposal_id=row["id"],
            role="memory_oracle",
            agent_id="memory-oracle-1",
            tools=frozenset({"memory.query"}),
            ttl_seconds=600,
            actor=_ACTOR,
        )
        self.acks.ack(op="grant", id=issued.record.id)
        if self.rng.random() < 0.5:
            self.store.grants.revoke(issued.record.id, actor=_ACTOR, reason="crash workload")
            self.acks.ack(op="grant_revoked", id=issued.record.id)

    def launch(self) -> None:
        launches = self.store.launches
        launch = launches.request(
            role="memory_oracle", agent_id="memory-oracle-1", proposal_id="P-crash", image="i"
        )
        self.acks.ack(op="launch", id=launch.id, status="requested")
        launches.mark_starting(launch.id, f"{self.n:064x}"[-64:])
        self.acks.ack(op="launch", id=launch.id, status="starting")
        launches.mark_running(launch.id)
        self.acks.ack(op="launch", id=launch.id, status="running")
        launches.finish(launch.id, LaunchStatus.EXITED, exit_code=0)
        self.acks.ack(op="launch", id=launch.id, status="exited")


def main(argv: list[str]) -> None:
    """Open the project, say ``ready``, and write until killed."""
    root, acklog, seed = Path(argv[0]), Path(argv[1]), int(argv[2])
    store = open_store(ProjectPaths(root))
    workload = _Workload(store, _Acks(acklog), random.Random(seed))
    print("ready", flush=True)
    while True:
        workload.step()


if __name__ == "__main__":
    main(sys.argv[1:])
