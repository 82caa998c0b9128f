"""Timelines: every step in order, with patch versions, vote counting, decisions and citations."""

from __future__ import annotations

import sqlite3

from store import Store, append_event
from tests.store.work_helpers import DIFF, DIFF_V2, new_task


def test_timeline_shows_every_step_in_order(store: Store) -> None:
    task = new_task(store)
    proposal, v1 = store.proposals.create(
        task_id=task.id, agent_id="implementer-1", title="t", patch=DIFF, actor="op"
    )
    pid = proposal["id"]
    store.reviews.request_review(proposal_id=pid, actor="op")
    old = store.reviews.cast(
        proposal_id=pid, agent_id="reviewer-1", vote="approve", reason_md="ok", actor="op"
    )
    decision = store.memory.record(
        scope="project", kind="decision", title="Keep lines quiet", body_md="b", actor="op"
    )
    stale = store.memory.record(scope=task.id, kind="constraint", title="Old rule", body_md="b", actor="op")
    store.memory.mark_stale(memory_id=stale.id, reason_md="gone", actor="op")

    def launch_and_warn(conn: sqlite3.Connection) -> None:
        append_event(conn, "role.started", actor="supervisor", task_id=task.id, proposal_id=pid, payload={})
        append_event(
            conn,
            "memory.oracle_warning",
            actor="memory-oracle-1",
            task_id=task.id,
            proposal_id=pid,
            payload={"message_md": "contradicts", "cited_memory_ids": [decision.id, stale.id, "M-gone"]},
        )

    store.db.write(launch_and_warn)
    _, v2, _ = store.proposals.attach_patch(proposal_id=pid, patch=DIFF_V2, actor="op")
    new = store.reviews.cast(
        proposal_id=pid, agent_id="reviewer-2", vote="approve", reason_md="ok", actor="op"
    )
    store.decisions.reject(proposal_id=pid, reason_md="changed our mind", actor="op")

    timeline = store.timeline.timeline(pid)
    assert timeline["proposal"]["id"] == pid and timeline["proposal"]["status"] == "rejected"
    events = timeline["events"]
    assert [e["id"] for e in events] == sorted(e["id"] for e in events)
    assert [e["type"] for e in events] == [
        "proposal.created",
        "proposal.patch_attached",
        "proposal.review_requested",
        "vote.cast",
        "role.started",
        "memory.oracle_warning",
        "proposal.patch_attached",
        "proposal.reviews_invalidated",
        "proposal.review_requested",
        "vote.cast",
        "decision.recorded",
        "proposal.rejected",
    ]
    attached = [e for e in events if e["type"] == "proposal.patch_attached"]
    assert [(e["patch"]["version"], e["patch"]["sha256"]) for e in attached] == [
        (1, v1.sha256),
        (2, v2.sha256),
    ]
    assert attached[1]["payload"]["reviews_reset"] is True
    votes = [e["vote"] for e in events if e["type"] == "vote.cast"]
    assert [(v["id"], v["patch_version"], v["counts"]) for v in votes] == [
        (old.vote.id, 1, False),
        (new.vote.id, 2, True),
    ]
    rounds = [e["payload"]["round"] for e in events if e["type"] == "proposal.review_requested"]
    assert [(r["number"], r["patch_version"]) for r in rounds] == [(1, 1), (2, 2)]
    warning = next(e for e in events if e["type"] == "memory.oracle_warning")
    assert warning["cited_memories"] == [
        {
            "id": decision.id,
            "title": "Keep lines quiet",
            "status": "active",
            "scope": "project",
            "kind": "decision",
        },
        {"id": stale.id, "title": "Old rule", "status": "stale", "scope": task.id, "kind": "constraint"},
        {"id": "M-gone", "missing": True},
    ]
    recorded = next(e for e in events if e["type"] == "decision.recorded")
    assert recorded["decision"]["outcome"] == "rejected" and recorded["decision"]["superseded_by"] is None


def test_timeline_of_other_proposals_is_separate(store: Store) -> None:
    task = new_task(store)
    a, _ = store.proposals.create(
        task_id=task.id, agent_id="implementer-1", title="a", patch=DIFF, actor="op"
    )
    b, _ = store.proposals.create(
        task_id=task.id, agent_id="implementer-2", title="b", patch=DIFF, actor="op"
    )
    assert {e["proposal_id"] for e in store.timeline.timeline(a["id"])["events"]} == {a["id"]}
    assert len(store.timeline.timeline(b["id"])["events"]) == 2
