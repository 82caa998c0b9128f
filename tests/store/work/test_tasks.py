"""Tasks: creation with its event, reads, paging, validation."""

from __future__ import annotations

import pytest

from store import Store, list_events
from store.errors import InvalidArgument, NotFound


def test_create_writes_the_task_and_its_event(store: Store) -> None:
    task = store.tasks.create(
        title="Add paging", body_md="Use cursors.", priority="high", risk="high", actor="op"
    )
    assert task.id.startswith("T-") and task.status == "open" and task.risk == "high"
    assert store.tasks.get(task.id) == task
    events = store.db.read(lambda conn: list_events(conn, task_id=task.id))
    assert [(e.type, e.actor) for e in events] == [("task.created", "op")]


def test_list_pages_oldest_first_and_filters(store: Store) -> None:
    made = [store.tasks.create(title=f"t{i}", actor="op").id for i in range(5)]
    first, cursor = store.tasks.list(limit=2)
    assert [t.id for t in first] == made[:2] and cursor == made[1]
    rest, end = store.tasks.list(limit=10, cursor=cursor)
    assert [t.id for t in rest] == made[2:] and end is None
    assert store.tasks.list(status="done")[0] == []


@pytest.mark.parametrize(
    "kwargs",
    [
        {"title": ""},
        {"title": "   "},
        {"title": "x" * 1001},
        {"title": "ok", "body_md": "x" * 200_001},
        {"title": "ok", "priority": "asap"},
        {"title": "ok", "risk": "extreme"},
        {"title": "bad\x00title"},
        {"title": "ok", "assignee": "no spaces allowed"},
    ],
)
def test_bad_input_is_invalid_argument(store: Store, kwargs: dict[str, object]) -> None:
    with pytest.raises(InvalidArgument):
        store.tasks.create(actor="op", **kwargs)
    assert store.tasks.list()[0] == []


def test_unknown_task_is_not_found(store: Store) -> None:
    with pytest.raises(NotFound):
        store.tasks.get("T-nope")
