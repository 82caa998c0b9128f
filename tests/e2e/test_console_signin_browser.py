"""A refused sign-in says what to do, in a real headless Chromium: a pasted non-token, an unknown
token and an agent token each get advice naming ``roundtable token create --name NAME``, never the
bare ``the bearer token is malformed``. Screenshot in ``test-artifacts/console-signin-*.png``.
"""

from __future__ import annotations

import pytest
from playwright.async_api import Browser, expect

from capabilities.auth import issue_agent_token
from capabilities.services import Services
from tests.capabilities.api_helpers import running_api
from tests.e2e.test_console_browser import LAPTOP, browser, shot

__all__ = ["browser"]  # the fixture, imported for these tests

pytestmark = pytest.mark.anyio


async def test_a_wrong_token_on_the_sign_in_page_says_how_to_get_a_right_one(
    services: Services, browser: Browser
) -> None:
    agent = issue_agent_token(services.store, name="r1", agent_id="reviewer-1", actor="operator").token
    cases = {
        "malformed": ("not a token, just words", "That is not a Roundtable token"),
        "unknown": ("A" * 43, "This project has no such token"),
        "agent": (agent, "only operator tokens open the console"),
    }
    async with running_api(services) as api:
        page = await browser.new_page(viewport=LAPTOP)
        for name, (pasted, says) in cases.items():
            await page.goto(f"{api.address.base_url}/login")
            await page.get_by_label("Operator token").fill(pasted)
            await page.get_by_role("button", name="Sign in").click()
            alert = page.get_by_role("alert")
            await expect(alert).to_contain_text(says)
            await expect(alert).to_contain_text("roundtable token create --name NAME")
            await expect(alert).not_to_contain_text("bearer token is malformed")
            assert pasted not in await alert.inner_text()
            await shot(page, f"signin-{name}")
        # And the right token still signs in.
        await page.get_by_label("Operator token").fill(api.token)
        await page.get_by_role("button", name="Sign in").click()
        await expect(page.get_by_role("alert")).to_have_count(0)
