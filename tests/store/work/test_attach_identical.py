"""Re-attaching a proposal's current patch, byte for byte, changes nothing and says so."""

from __future__ import annotations

from store import Store, list_events
from tests.store.work_helpers import DIFF, DIFF_V2, new_task


def _events(store: Store, proposal_id: str) -> list[str]:
    return store.db.read(lambda conn: [e.type for e in list_events(conn, proposal_id=proposal_id, limit=500)])


def test_the_same_bytes_again_are_a_no_op_that_keeps_an_accepted_proposal_accepted(store: Store) -> None:
    task = new_task(store)
    proposal, _ = store.proposals.create(
        task_id=task.id, agent_id="implementer-1", title="Loud", patch=DIFF, actor="op"
    )
    pid = proposal["id"]
    store.reviews.request_review(proposal_id=pid, actor="op")
    for agent in ("reviewer-1", "reviewer-2"):
        store.reviews.cast(proposal_id=pid, agent_id=agent, vote="approve", reason_md="ok", actor="op")
    assert store.proposals.get(pid)["status"] == "accepted"
    before = _events(store, pid)

    view, version, invalidated = store.proposals.attach_patch(proposal_id=pid, patch=DIFF, actor="op")
    assert version.unchanged and version.version == 1 and invalidated == []
    assert version.to_dict()["unchanged"] is True
    assert view["status"] == "accepted" and view["current_version"] == 1
    assert _events(store, pid) == before  # no event, no new version, no reset
    assert [v["version"] for v in store.proposals.get(pid)["versions"]] == [1]
    assert not (store.paths.patches_dir / pid / "v2.diff").exists()

    # A different diff is a new version as before, and the answer carries no `unchanged` key.
    view, version, invalidated = store.proposals.attach_patch(proposal_id=pid, patch=DIFF_V2, actor="op")
    assert version.version == 2 and not version.unchanged and "unchanged" not in version.to_dict()
    assert len(invalidated) == 2 and view["status"] == "in_review"
