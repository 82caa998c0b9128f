"""``POST /warnings/{event_id}/feedback`` and ``GET /oracle/stats`` over real HTTP."""

from __future__ import annotations

from typing import Any

import pytest

from capabilities.services import Services
from store import FEEDBACK_EVENT, Store
from store.events import list_events
from store.events._audit import list_audit
from tests.capabilities.api_helpers import assert_error, running_api, seed_review, table_counts
from tests.store.feedback.helpers import stats_row

pytestmark = pytest.mark.anyio


@pytest.fixture
def seeded(store: Store) -> dict[str, Any]:
    return seed_review(store)


async def test_feedback_writes_an_event_and_its_audit_row(
    services: Services, store: Store, seeded: dict[str, Any]
) -> None:
    warning_id = seeded["warning_event_id"]
    async with running_api(services) as api:
        response = await api.client.post(
            f"/warnings/{warning_id}/feedback", json={"verdict": "dismissed", "reason": "renamed only"}
        )
        assert response.status_code == 201, response.text
        event = response.json()["event"]
        assert (event["type"], event["actor"]) == (FEEDBACK_EVENT, "alice")
        assert event["payload"]["verdict"] == "dismissed"
        assert event["payload"]["reason"] == "renamed only"
        stats = await api.client.get("/oracle/stats")
        assert stats.status_code == 200, stats.text
        assert stats.json() == {"providers": [stats_row("unknown", 1, 0, 1, 0, 0.0)]}
    audit = store.db.read(lambda conn: list_audit(conn, target_id=str(warning_id)))
    assert [(row.action, row.actor, row.event_id) for row in audit] == [
        ("oracle.feedback", "alice", event["id"])
    ]


async def test_an_idempotent_replay_writes_once(
    services: Services, store: Store, seeded: dict[str, Any]
) -> None:
    path = f"/warnings/{seeded['warning_event_id']}/feedback"
    async with running_api(services) as api:
        headers = {"Idempotency-Key": "feedback-1"}
        first = await api.client.post(path, json={"verdict": "confirmed"}, headers=headers)
        assert first.status_code == 201, first.text
        again = await api.client.post(path, json={"verdict": "confirmed"}, headers=headers)
        assert again.status_code == 201
        assert again.headers["idempotent-replayed"] == "true"
        assert again.json() == first.json()
        assert_error(
            await api.client.post(path, json={"verdict": "dismissed"}, headers=headers), 409, "conflict"
        )
    feedback = store.db.read(lambda conn: list_events(conn, types=(FEEDBACK_EVENT,)))
    assert len(feedback) == 1


async def test_refusals_change_nothing(services: Services, store: Store, seeded: dict[str, Any]) -> None:
    warning = f"/warnings/{seeded['warning_event_id']}/feedback"
    async with running_api(services) as api:
        before = table_counts(store)
        mismatch = await api.client.post(
            warning, json={"verdict": "confirmed"}, headers={"X-Actor-ID": "mallory"}
        )
        assert_error(mismatch, 403, "forbidden")
        assert_error(
            await api.client.post("/warnings/999999/feedback", json={"verdict": "confirmed"}),
            404,
            "not_found",
        )
        assert_error(
            await api.client.post("/warnings/1/feedback", json={"verdict": "confirmed"}),
            400,
            "invalid_argument",
        )
        assert_error(
            await api.client.post("/warnings/x1/feedback", json={"verdict": "confirmed"}),
            400,
            "invalid_argument",
        )
        assert_error(await api.client.post(warning, json={"verdict": "maybe"}), 400, "invalid_argument")
        assert_error(await api.client.post(warning, json={}), 400, "invalid_argument")
        assert_error(
            await api.client.post(warning, json={"verdict": "confirmed", "extra": 1}), 400, "invalid_argument"
        )
        assert_error(
            await api.client.post(warning, json={"verdict": "confirmed", "reason": "x" * 501}),
            400,
            "invalid_argument",
        )
        unauthenticated = await api.client.get("/oracle/stats", headers={"Authorization": "Bearer nope"})
        assert_error(unauthenticated, 401, "unauthenticated")
        assert table_counts(store) == before
