"""The oracle's task history (``task.history``) as the store reads it, on both backends."""

from __future__ import annotations

from store import Store
from store._oracle import OracleStore
from tests.store.work_helpers import DIFF, mint_oracle_grant, new_task


def test_the_history_lists_its_tasks_and_the_projects_active_memories_as_the_tools_answer_them(
    store: Store,
) -> None:
    task = new_task(store, "the task")
    other = new_task(store, "another task")
    proposal, _ = store.proposals.create(
        task_id=task.id, agent_id="implementer-1", title="p", patch=DIFF, actor="op"
    )
    record = store.memory.record
    mine = record(scope=task.id, kind="constraint", title="Task rule", body_md="b", importance=90, actor="op")
    shared = record(scope="project", kind="decision", title="Project rule", body_md="c", actor="op")
    stale = record(scope="project", kind="fact", title="Old", body_md="d", actor="op")
    store.memory.mark_stale(memory_id=stale.id, reason_md="superseded", actor="op")
    record(scope=other.id, kind="fact", title="Elsewhere", body_md="e", actor="op")
    issued = mint_oracle_grant(store, proposal["id"], "task.history")
    history = OracleStore(store.db, store.config).history(issued.record)
    # Newest first; each entry exactly the memory tools' projection of the stored record.
    assert history["memories"] == [shared.core(), mine.core()]
    assert history["truncated"]["memories"] is False
    assert [item["id"] for item in history["proposals"]] == [proposal["id"]]
