"""Launch records: the status table, one event per move in the same transaction, bounded fields."""

from __future__ import annotations

import itertools
import sqlite3
from typing import Any

import pytest

import store.launches._store as launches_module
from store import Conflict, InternalError, InvalidArgument, NotFound, Store, list_events
from store.launches._store import (
    ACTIVE_STATUSES,
    MAX_LOG_TAIL_BYTES,
    TERMINAL_STATUSES,
    TRANSITIONS,
    Launch,
    LaunchStatus,
    bounded_tail,
)
from tests.helpers import project_snapshot


def _request(store: Store, **overrides: Any) -> Launch:
    fields: dict[str, Any] = {
        "role": "memory_oracle",
        "agent_id": "memory-oracle-1",
        "proposal_id": "P-1",
        "image": "roundtable-role:0.1.0",
    }
    fields.update(overrides)
    return store.launches.request(**fields)


def _events(store: Store) -> list[tuple[str, dict[str, Any]]]:
    return [(e.type, e.payload) for e in store.db.read(lambda conn: list_events(conn, limit=1000))]


def test_happy_path_writes_one_event_per_move(store: Store) -> None:
    launch = _request(store, task_id="T-1", provider="lexical")
    assert launch.id.startswith("L-")
    assert launch.status is LaunchStatus.REQUESTED and launch.container_id is None

    starting = store.launches.mark_starting(launch.id, "c0ffee")
    assert starting.status is LaunchStatus.STARTING and starting.container_id == "c0ffee"
    running = store.launches.mark_running(launch.id)
    assert running.status is LaunchStatus.RUNNING and running.started_at is not None
    done = store.launches.finish(
        launch.id, LaunchStatus.EXITED, exit_code=0, log_tail="hello\n", usage={"tokens": 3}
    )
    assert done.status is LaunchStatus.EXITED and done.ended_at is not None
    assert done.log_tail == "hello\n" and done.usage == {"tokens": 3}
    assert store.launches.get(launch.id) == done

    events = _events(store)
    assert [t for t, _ in events] == [
        "role.launch_requested",
        "role.container_created",
        "role.started",
        "role.exited",
    ]
    assert all(p["launch_id"] == launch.id for _, p in events)
    assert events[1][1]["container_id"] == "c0ffee"
    assert "log_tail" not in str(events)  # logs stay in the row, never in events
    rows = store.db.read(
        lambda conn: conn.execute("SELECT DISTINCT proposal_id, task_id FROM events").fetchall()
    )
    assert [tuple(r) for r in rows] == [("P-1", "T-1")]
    assert done.to_dict()["status"] == "exited" and "log_tail" not in done.to_dict()
    assert done.to_dict(with_log=True)["log_tail"] == "hello\n"


@pytest.mark.parametrize("status", [LaunchStatus.FAILED, LaunchStatus.TIMEOUT, LaunchStatus.CANCELLED])
def test_unsuccessful_ends_are_role_failed_with_their_status(store: Store, status: LaunchStatus) -> None:
    launch = _request(store)
    store.launches.mark_starting(launch.id, "abc")
    store.launches.mark_running(launch.id)
    done = store.launches.finish(launch.id, status, exit_code=137, reason="why")
    assert (done.status, done.exit_code, done.reason) == (status, 137, "why")
    last_type, last_payload = _events(store)[-1]
    assert last_type == "role.failed"
    assert last_payload["status"] == str(status) and last_payload["reason"] == "why"


def test_every_transition_outside_the_table_is_refused_and_changes_nothing(store: Store) -> None:
    """Walk each status to every other status: allowed moves succeed, the rest are Conflicts."""
    paths_to: dict[LaunchStatus, list[str]] = {
        LaunchStatus.REQUESTED: [],
        LaunchStatus.STARTING: ["starting"],
        LaunchStatus.RUNNING: ["starting", "running"],
        LaunchStatus.EXITED: ["starting", "running", "exited"],
        LaunchStatus.FAILED: ["failed"],
        LaunchStatus.TIMEOUT: ["starting", "running", "timeout"],
        LaunchStatus.CANCELLED: ["cancelled"],
    }

    def move(launch_id: str, to: LaunchStatus) -> Launch:
        if to is LaunchStatus.STARTING:
            return store.launches.mark_starting(launch_id, f"c-{launch_id}")
        if to is LaunchStatus.RUNNING:
            return store.launches.mark_running(launch_id)
        return store.launches.finish(launch_id, to)

    targets = [s for s in LaunchStatus if s is not LaunchStatus.REQUESTED]  # no call moves back there
    for source, target in itertools.product(LaunchStatus, targets):
        launch = _request(store)
        for step in paths_to[source]:
            move(launch.id, LaunchStatus(step))
        assert store.launches.get(launch.id).status is source
        if target in TRANSITIONS[source]:
            assert move(launch.id, target).status is target
        else:
            before = project_snapshot(store.paths)
            with pytest.raises(Conflict):
                move(launch.id, target)
            assert project_snapshot(store.paths) == before, (source, target)


def test_table_shape() -> None:
    assert set(TRANSITIONS) == set(LaunchStatus)
    assert set(LaunchStatus) == ACTIVE_STATUSES | TERMINAL_STATUSES
    assert all(not TRANSITIONS[s] for s in TERMINAL_STATUSES)


def test_status_change_and_event_share_one_transaction(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    launch = _request(store)
    before = project_snapshot(store.paths)

    def broken(*args: Any, **kwargs: Any) -> None:
        raise sqlite3.OperationalError("disk I/O error (injected)")

    monkeypatch.setattr(launches_module, "append_event", broken)
    with pytest.raises(InternalError) as caught:  # translated at the database boundary, chained
        store.launches.mark_starting(launch.id, "abc")
    assert isinstance(caught.value.__cause__, sqlite3.OperationalError)
    assert project_snapshot(store.paths) == before
    assert store.launches.get(launch.id).status is LaunchStatus.REQUESTED


def test_bad_input_is_refused_and_changes_nothing(store: Store) -> None:
    launch = _request(store)
    before = project_snapshot(store.paths)
    for bad in ({"role": ""}, {"agent_id": "  "}, {"proposal_id": None}, {"image": "x" * 201}):
        with pytest.raises(InvalidArgument):
            _request(store, **bad)
    with pytest.raises(InvalidArgument):
        store.launches.mark_starting(launch.id, "")
    with pytest.raises(InvalidArgument):
        store.launches.finish(launch.id, LaunchStatus.RUNNING)
    with pytest.raises(InvalidArgument):
        store.launches.finish(launch.id, LaunchStatus.EXITED, exit_code=3)
    with pytest.raises(NotFound):
        store.launches.mark_running("L-missing")
    with pytest.raises(NotFound):
        store.launches.get("L-missing")
    assert project_snapshot(store.paths) == before


def test_log_tail_and_error_are_bounded(store: Store) -> None:
    launch = _request(store)
    noisy = "x" * (MAX_LOG_TAIL_BYTES * 2) + "THE END"
    done = store.launches.finish(launch.id, LaunchStatus.FAILED, error="e" * 10_000, log_tail=noisy)
    assert done.log_tail is not None and done.log_tail.endswith("THE END")
    assert len(done.log_tail.encode()) <= MAX_LOG_TAIL_BYTES
    assert done.error is not None and len(done.error) == launches_module.MAX_ERROR_CHARS


def test_bounded_tail_never_splits_a_character() -> None:
    text = "é" * 100
    cut = bounded_tail(text, 51)
    assert cut == "é" * 25
    assert bounded_tail("short", 100) == "short"


def test_container_ids_are_unique(store: Store) -> None:
    first, second = _request(store), _request(store)
    store.launches.mark_starting(first.id, "same")
    with pytest.raises(Conflict):
        store.launches.mark_starting(second.id, "same")
    assert store.launches.get(second.id).status is LaunchStatus.REQUESTED


def test_fail_orphans_marks_every_active_launch_but_the_kept_ones(store: Store) -> None:
    requested = _request(store)
    starting = _request(store)
    store.launches.mark_starting(starting.id, "c1")
    running = _request(store)
    store.launches.mark_starting(running.id, "c2")
    store.launches.mark_running(running.id)
    kept = _request(store)
    done = _request(store)
    store.launches.finish(done.id, LaunchStatus.CANCELLED)

    failed = store.launches.fail_orphans(keep={kept.id})
    assert {launch.id for launch in failed} == {requested.id, starting.id, running.id}
    for launch in failed:
        assert launch.status is LaunchStatus.FAILED and launch.reason == "supervisor_restarted"
    assert [launch.id for launch in store.launches.active()] == [kept.id]
    assert store.launches.get(done.id).status is LaunchStatus.CANCELLED
    assert [t for t, _ in _events(store)].count("role.failed") == 4  # three orphans and the cancelled one
    assert store.launches.fail_orphans(keep={kept.id}) == []


def test_list_filters(store: Store) -> None:
    a = _request(store, proposal_id="P-a")
    b = _request(store, proposal_id="P-b")
    store.launches.finish(b.id, LaunchStatus.FAILED)
    assert [x.id for x in store.launches.find(proposal_id="P-a")] == [a.id]
    assert [x.id for x in store.launches.find(statuses=[LaunchStatus.FAILED])] == [b.id]
    assert [x.id for x in store.launches.find()] == [a.id, b.id]
