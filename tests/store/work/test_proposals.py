"""Proposals and patch versions: creation, new versions, events, validation."""

from __future__ import annotations

import pytest

from store import Store, list_events
from store.errors import Conflict, Forbidden, InvalidArgument, NotFound
from tests.helpers import project_snapshot
from tests.store.work_helpers import DIFF, DIFF_V2, SECURITY_DIFF, new_task


def test_create_records_version_one_and_its_events(store: Store) -> None:
    task = store.tasks.create(title="t", risk="high", actor="op")
    proposal, patch = store.proposals.create(
        task_id=task.id,
        agent_id="implementer-1",
        title="Shout",
        patch=DIFF,
        summary_md="Makes two loud.",
        affected_resources=["hello.txt"],
        expected_tests=["test_hello"],
        rollback_notes_md="git revert",
        actor="op",
    )
    assert proposal["id"].startswith("P-") and proposal["status"] == "pending"
    assert proposal["risk"] == "high"  # the task's risk by default
    assert proposal["current_version"] == 1 and proposal["patch"] == patch.to_dict()
    assert patch.files == ("hello.txt",) and len(patch.sha256) == 64
    assert proposal["consensus"] == {
        "patch_version": 1, "approvals": 0, "required": 2, "blocking": [], "revisions_requested": [],
        "missing_roles": [], "counting_vote_ids": [], "reached": False,
    }  # fmt: skip
    events = store.db.read(lambda conn: list_events(conn, proposal_id=proposal["id"]))
    assert [e.type for e in events] == ["proposal.created", "proposal.patch_attached"]
    assert events[1].payload["sha256"] == patch.sha256 and events[1].payload["version"] == 1


def test_a_missing_final_newline_is_added(store: Store) -> None:
    task = new_task(store)
    _, patch = store.proposals.create(
        task_id=task.id, agent_id="implementer-1", title="t", patch=DIFF.rstrip("\n"), actor="op"
    )
    assert store.patches.read_verified(patch) == DIFF.encode()


def test_attach_patch_adds_a_version_and_keeps_the_first(store: Store) -> None:
    task = new_task(store)
    proposal, v1 = store.proposals.create(
        task_id=task.id, agent_id="implementer-1", title="t", patch=DIFF, actor="op"
    )
    view, v2, invalidated = store.proposals.attach_patch(
        proposal_id=proposal["id"], patch=DIFF_V2, actor="op"
    )
    assert v2.version == 2 and view["current_version"] == 2 and invalidated == []
    assert [v["version"] for v in view["versions"]] == [1, 2]
    assert store.patches.read_verified(v1) == DIFF.encode()
    assert view["status"] == "pending"  # no round was open, so none is opened


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"agent_id": "nobody"}, Forbidden),
        ({"agent_id": "memory-oracle-1"}, Forbidden),
        ({"task_id": "T-missing"}, NotFound),
        ({"patch": "not a diff\n"}, InvalidArgument),
        ({"patch": DIFF.replace("hello.txt", "../hello.txt")}, InvalidArgument),
        ({"patch": "x" * (1 << 20 + 1)}, InvalidArgument),
        ({"title": ""}, InvalidArgument),
        ({"risk": "huge"}, InvalidArgument),
        ({"affected_resources": ["ok", ""]}, InvalidArgument),
        ({"expected_tests": "not a list"}, InvalidArgument),
    ],
)
def test_bad_create_changes_nothing(store: Store, kwargs: dict[str, object], error: type[Exception]) -> None:
    task = new_task(store)
    before = project_snapshot(store.paths)
    arguments: dict[str, object] = {
        "task_id": task.id, "agent_id": "implementer-1", "title": "t", "patch": DIFF, **kwargs,
    }  # fmt: skip
    with pytest.raises(error):
        store.proposals.create(actor="op", **arguments)
    assert project_snapshot(store.paths) == before


def test_no_new_version_for_a_closed_proposal(store: Store) -> None:
    task = new_task(store)
    proposal, _ = store.proposals.create(
        task_id=task.id, agent_id="implementer-1", title="t", patch=DIFF, actor="op"
    )
    store.decisions.reject(proposal_id=proposal["id"], reason_md="no", actor="op")
    before = project_snapshot(store.paths)
    with pytest.raises(Conflict, match="rejected"):
        store.proposals.attach_patch(proposal_id=proposal["id"], patch=DIFF_V2, actor="op")
    assert project_snapshot(store.paths) == before


def test_list_filters_by_task_and_status(store: Store) -> None:
    first, second = new_task(store), new_task(store)
    a, _ = store.proposals.create(
        task_id=first.id, agent_id="implementer-1", title="a", patch=DIFF, actor="op"
    )
    b, _ = store.proposals.create(
        task_id=second.id, agent_id="implementer-2", title="b", patch=SECURITY_DIFF, actor="op"
    )
    assert [p["id"] for p in store.proposals.list()[0]] == [a["id"], b["id"]]
    assert [p["id"] for p in store.proposals.list(task_id=second.id)[0]] == [b["id"]]
    store.reviews.request_review(proposal_id=b["id"], actor="op")
    assert [p["id"] for p in store.proposals.list(status="in_review")[0]] == [b["id"]]
    page, cursor = store.proposals.list(limit=1)
    assert [p["id"] for p in page] == [a["id"]] and cursor == a["id"]


def test_any_character_but_nul_is_fair_in_a_diff(store: Store) -> None:
    task = new_task(store)
    text = "--- a/gnu.c\n+++ b/gnu.c\n@@ -1 +1,2 @@\n int x;\n+\x0c\x1b[0m\r\n"
    _, patch = store.proposals.create(
        task_id=task.id, agent_id="implementer-1", title="t", patch=text, actor="op"
    )
    assert store.patches.read_verified(patch) == text.encode()
