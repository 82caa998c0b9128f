"""Feedback on oracle warnings: an event of its own, the latest per operator, stats per provider."""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest

from store import FEEDBACK_EVENT, OracleFeedback, Store
from store.errors import InvalidArgument, NotFound
from store.events import append_event, list_events
from store.events._audit import list_audit
from tests.capabilities.api_helpers import seed_review, table_counts
from tests.store.feedback.helpers import stats_row


def _warning(store: Store, proposal_id: str, launch_id: str | None) -> int:
    def write(conn: sqlite3.Connection) -> int:
        event = append_event(
            conn,
            "memory.oracle_warning",
            actor="memory-oracle-1",
            proposal_id=proposal_id,
            payload={"message_md": "careful", "severity": "warning", "launch_id": launch_id},
        )
        return event.id

    return store.db.write(write)


def _launch(store: Store, proposal_id: str, provider: str) -> str:
    launch = store.launches.request(
        role="memory_oracle",
        agent_id="memory-oracle-1",
        proposal_id=proposal_id,
        image="img:1",
        provider=provider,
    )
    return launch.id


@pytest.fixture
def seeded(store: Store) -> dict[str, Any]:
    return seed_review(store)


def test_feedback_is_an_event_and_the_warning_is_untouched(store: Store, seeded: dict[str, Any]) -> None:
    warning_id = seeded["warning_event_id"]
    before = store.db.read(
        lambda conn: dict(conn.execute("SELECT * FROM events WHERE id = ?", (warning_id,)).fetchone())
    )
    committed = OracleFeedback(store.db).give(
        warning_id, "confirmed", actor="alice", reason="right", audit=True
    )
    event = committed.body["event"]
    assert event["type"] == FEEDBACK_EVENT == "memory.oracle_feedback"
    assert event["actor"] == "alice"
    assert event["proposal_id"] == seeded["proposal_id"]
    assert event["payload"] == {
        "warning_event_id": warning_id,
        "verdict": "confirmed",
        "reason": "right",
        "proposal_id": seeded["proposal_id"],
        "task_id": seeded["task_id"],
        "launch_id": "L-test",
        "provider": "unknown",
    }
    after = store.db.read(
        lambda conn: dict(conn.execute("SELECT * FROM events WHERE id = ?", (warning_id,)).fetchone())
    )
    assert after == before
    audit = store.db.read(lambda conn: list_audit(conn, target_id=str(warning_id)))
    assert [(row.action, row.target_type, row.event_id) for row in audit] == [
        ("oracle.feedback", "warning", event["id"])
    ]


def test_no_audit_row_unless_asked(store: Store, seeded: dict[str, Any]) -> None:
    before = table_counts(store, "audit_log")
    OracleFeedback(store.db).give(seeded["warning_event_id"], "dismissed", actor="alice")
    assert table_counts(store, "audit_log") == before


@pytest.mark.parametrize(
    ("event_id", "verdict", "reason", "error"),
    [
        (10_000, "confirmed", None, NotFound),
        (0, "confirmed", None, InvalidArgument),
        (True, "confirmed", None, InvalidArgument),
        ("1", "confirmed", None, InvalidArgument),
        (None, "maybe", None, InvalidArgument),
        (None, "confirmed", "x" * 501, InvalidArgument),
        (None, "confirmed", "bell\x07", InvalidArgument),
        ("not-a-warning", "confirmed", None, InvalidArgument),
    ],
)
def test_bad_feedback_is_refused_and_writes_nothing(
    store: Store,
    seeded: dict[str, Any],
    event_id: object,
    verdict: str,
    reason: str | None,
    error: type[Exception],
) -> None:
    if event_id is None:
        event_id = seeded["warning_event_id"]
    elif event_id == "not-a-warning":
        event_id = store.db.read(lambda conn: list_events(conn, types=("task.created",))[0].id)
    before = table_counts(store)
    with pytest.raises(error):
        OracleFeedback(store.db).give(event_id, verdict, actor="alice", reason=reason, audit=True)
    assert table_counts(store) == before


def test_the_latest_verdict_of_each_operator_counts(store: Store, seeded: dict[str, Any]) -> None:
    feedback = OracleFeedback(store.db)
    warning_id, pid = seeded["warning_event_id"], seeded["proposal_id"]
    feedback.give(warning_id, "dismissed", actor="alice")
    assert feedback.verdicts(pid) == {warning_id: "dismissed"}
    feedback.give(warning_id, "confirmed", actor="alice")  # alice changes her mind
    assert feedback.verdicts(pid) == {warning_id: "confirmed"}
    stats = feedback.stats()["providers"]
    assert stats == [stats_row("unknown", 1, 1, 0, 0, 1.0)]
    feedback.give(warning_id, "dismissed", actor="bob")  # one each: the most recent decides
    assert feedback.verdicts(pid) == {warning_id: "dismissed"}
    feedback.give(warning_id, "confirmed", actor="carol")  # two against one
    assert feedback.verdicts(pid) == {warning_id: "confirmed"}
    assert len(store.db.read(lambda conn: list_events(conn, types=(FEEDBACK_EVENT,)))) == 4


def test_stats_per_provider_over_several_launches(store: Store, seeded: dict[str, Any]) -> None:
    pid = seeded["proposal_id"]
    judge_a, judge_b, lexical = (_launch(store, pid, p) for p in ("judge", "judge", "lexical"))
    warnings = {
        "judge": [_warning(store, pid, judge_a) for _ in range(3)] + [_warning(store, pid, judge_b)],
        "lexical": [_warning(store, pid, lexical) for _ in range(3)],
    }
    feedback = OracleFeedback(store.db)
    j, lx = warnings["judge"], warnings["lexical"]
    for event_id in (j[0], j[1], j[3]):
        feedback.give(event_id, "confirmed", actor="alice")
    feedback.give(j[2], "dismissed", actor="alice")
    feedback.give(j[2], "confirmed", actor="alice")  # replaced: j[2] is confirmed now
    feedback.give(j[3], "dismissed", actor="alice")  # replaced: j[3] is dismissed now
    feedback.give(lx[0], "dismissed", actor="alice")
    feedback.give(lx[1], "confirmed", actor="bob")
    feedback.give(lx[1], "dismissed", actor="alice")  # a tie: alice's is the most recent
    by_provider = {item["provider"]: item for item in feedback.stats()["providers"]}
    assert by_provider == {
        "judge": stats_row("judge", 4, 3, 1, 0, 0.75),
        "lexical": stats_row("lexical", 3, 0, 2, 1, 0.0),
        "unknown": stats_row("unknown", 1, 0, 0, 1, None),
    }
    payload = store.db.read(lambda conn: list_events(conn, types=(FEEDBACK_EVENT,)))[0].payload
    assert payload["provider"] == "judge" and payload["launch_id"] == judge_a


def test_stats_reads_no_full_scan_of_the_events(store: Store, seeded: dict[str, Any]) -> None:
    OracleFeedback(store.db).give(seeded["warning_event_id"], "confirmed", actor="alice")
    statements: list[str] = []

    def read(conn: sqlite3.Connection) -> list[str]:
        conn.set_trace_callback(statements.append)
        try:
            OracleFeedback(store.db)._stats(conn)
        finally:
            conn.set_trace_callback(None)
        selects = [sql for sql in statements if sql.lstrip().upper().startswith("SELECT")]
        return [
            " | ".join(str(row[3]) for row in conn.execute("EXPLAIN QUERY PLAN " + sql)) for sql in selects
        ]

    plans = store.db.read(read)
    assert len(plans) >= 2, statements
    assert not [plan for plan in plans if "SCAN events" in plan or "SCAN role_launches" in plan], plans
    assert sum("events_by_type" in plan for plan in plans) == 2, plans
