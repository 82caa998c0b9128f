"""Confirm / Dismiss on the console's proposal page over real HTTP: CSRF, audit, the verdict shown."""

from __future__ import annotations

import pytest

from capabilities.services import Services
from store import FEEDBACK_EVENT
from store.events import list_events
from store.events._audit import list_audit
from tests.capabilities.api_helpers import running_api, seed_review, table_counts
from tests.capabilities.console.test_console_http import browser_like, csrf_of, log_in

pytestmark = pytest.mark.anyio


async def test_feedback_forms_need_the_csrf_token_and_show_the_verdict(services: Services) -> None:
    seeded = seed_review(services.store)
    pid, warning_id = seeded["proposal_id"], seeded["warning_event_id"]
    action = f"/warnings/{warning_id}/feedback"
    async with running_api(services) as api, browser_like(api) as client:
        await log_in(client, api.token)
        page = await client.get(f"/proposals/{pid}")
        assert page.status_code == 200
        assert f'action="{action}"' in page.text
        assert "Verdict: " in page.text and "unreviewed" in page.text
        csrf = csrf_of(page.text)
        before = table_counts(api.store)
        forged = await client.post(action, data={"verdict": "confirmed", "csrf_token": "forged"})
        assert forged.status_code == 403
        cross_site = await client.post(
            action,
            data={"verdict": "confirmed", "csrf_token": csrf},
            headers={"Origin": "https://evil.example"},
        )
        assert cross_site.status_code == 403
        missing = await client.post(
            "/warnings/999999/feedback", data={"verdict": "confirmed", "csrf_token": csrf}
        )
        assert missing.status_code == 404 and 'role="alert"' in missing.text
        assert table_counts(api.store) == before

        done = await client.post(
            action,
            data={"verdict": "dismissed", "reason": "not this line", "csrf_token": csrf},
            headers={"Origin": api.address.base_url},
        )
        assert (done.status_code, done.headers["location"]) == (
            303,
            f"/proposals/{pid}#feedback-{warning_id}",
        )
        shown = await client.get(f"/proposals/{pid}")
        assert 'badge-muted">dismissed</span>' in shown.text
    events = api.store.db.read(lambda conn: list_events(conn, types=(FEEDBACK_EVENT,)))
    assert [(e.actor, e.payload["verdict"], e.payload["reason"]) for e in events] == [
        ("alice", "dismissed", "not this line")
    ]
    audit = api.store.db.read(lambda conn: list_audit(conn, target_id=str(warning_id)))
    assert [(row.action, row.event_id) for row in audit] == [("oracle.feedback", events[0].id)]
