"""The console shows an entry's executable checks, and lists summaries after the entries they summarise
(a real headless Chromium; screenshots in ``test-artifacts/``)."""

from __future__ import annotations

import pytest
from playwright.async_api import Browser, expect

from capabilities.services import Services
from tests.capabilities.api_helpers import running_api
from tests.e2e.test_console_browser import _LOWEST_CONTRAST, LAPTOP, browser, shot, sign_in

__all__ = ["browser"]  # the fixture, imported for these tests

pytestmark = pytest.mark.anyio

CHECKS = [
    {
        "kind": "forbid_added",
        "pattern": r"verify\s*=\s*False",
        "paths": ["app/", "*.py"],
        "message": "TLS on.",
    },
    {"kind": "require_kept", "pattern": r"timeout=", "paths": [], "message": ""},
]


async def test_the_memory_page_lists_the_checks(services: Services, browser: Browser) -> None:
    store = services.store
    summary = store.memory.record(
        scope="T-1", kind="summary", title="Oracle summary", body_md="TLS TLS TLS", actor="oracle"
    )
    entry = store.memory.record(
        scope="project", kind="decision", title="TLS stays on", body_md="Never verify=False.",
        checks=CHECKS, actor="op",
    )  # fmt: skip
    async with running_api(services) as api:
        page = await (await browser.new_context(viewport=LAPTOP)).new_page()
        await sign_in(page, api, f"/memories/{entry.id}")
        await expect(page.get_by_role("heading", level=1, name="TLS stays on")).to_be_visible()
        checks = page.locator("ul.checks li.check")
        await expect(checks).to_have_count(2)
        pattern = checks.first.locator("code.pattern")
        await expect(pattern).to_have_text(r"verify\s*=\s*False")
        assert "mono" in await pattern.evaluate("e => getComputedStyle(e).fontFamily")
        await expect(checks.first).to_contain_text("forbid_added")
        await expect(checks.first.locator(".paths")).to_have_text("app/, *.py")
        await expect(checks.first).to_contain_text("TLS on.")
        await expect(checks.nth(1).locator(".paths")).to_have_text("every file")
        lowest = await page.evaluate(_LOWEST_CONTRAST)
        assert lowest["ratio"] >= 4.5, lowest
        await shot(page, "memory-checks")

        # The list: the summary was recorded first, but comes after the decision.
        await page.goto(f"{api.address.base_url}/memories")
        links = page.locator("table tbody tr td:first-child a")
        await expect(links).to_have_count(2)
        assert [await links.nth(i).text_content() for i in range(2)] == [entry.title, summary.title]
        await shot(page, "memory-list-summaries-last")
