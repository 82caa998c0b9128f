"""Confirming an oracle warning in the console, in a real headless Chromium (Playwright).

A maintainer signs in, opens the proposal, confirms its warning with a reason and sees the verdict;
a screenshot goes to ``test-artifacts/console-feedback.png``.
"""

from __future__ import annotations

import re

import pytest
from playwright.async_api import Browser, expect

from capabilities.services import Services
from store import FEEDBACK_EVENT
from store.events import list_events
from tests.capabilities.api_helpers import running_api, seed_review
from tests.e2e.test_console_browser import LAPTOP, browser, shot, sign_in

pytestmark = pytest.mark.anyio

__all__ = ["browser"]  # the fixture, shared with the console's other browser test


async def test_confirm_a_warning_and_see_the_verdict(services: Services, browser: Browser) -> None:
    seeded = seed_review(services.store)
    async with running_api(services) as api:
        context = await browser.new_context(viewport=LAPTOP)
        page = await context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        await sign_in(page, api, f"/proposals/{seeded['proposal_id']}")
        warnings = page.get_by_role("region", name=re.compile("Oracle warnings"))
        feedback = warnings.locator(f"#feedback-{seeded['warning_event_id']}")
        await expect(feedback.locator(".verdict")).to_have_text("Verdict: unreviewed")
        await feedback.get_by_label("Confirm reason").fill("raw SQL, as the decision forbids")
        await feedback.get_by_role("button", name="Confirm").click()
        await page.wait_for_url(re.compile(f"#feedback-{seeded['warning_event_id']}$"))
        feedback = page.locator(f"#feedback-{seeded['warning_event_id']}")
        await expect(feedback.locator(".verdict")).to_have_text("Verdict: confirmed")
        await shot(page, "feedback")
        assert errors == []
        await context.close()
    events = api.store.db.read(lambda conn: list_events(conn, types=(FEEDBACK_EVENT,)))
    assert [(e.actor, e.payload["verdict"], e.payload["reason"]) for e in events] == [
        ("alice", "confirmed", "raw SQL, as the decision forbids")
    ]
