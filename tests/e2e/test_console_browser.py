"""The web console in a real headless Chromium (Debian's ``chromium``, driven by Playwright).

A maintainer signs in with an operator token, opens a proposal page, sees the oracle's warning,
follows its citation to the memory entry, compares two revisions, and watches a new event arrive
live. Screenshots go to ``test-artifacts/`` (gitignored) for a person to look at.
"""

from __future__ import annotations

import re
import shutil
import sqlite3
from collections.abc import AsyncIterator

import pytest
from playwright.async_api import Browser, Page, ViewportSize, async_playwright, expect

from capabilities.mcp import call_tool
from capabilities.mcp.tools import build_registry
from capabilities.services import Services
from store import append_event
from tests.capabilities.api_helpers import Api, running_api, seed_review
from tests.capabilities.oracle_helpers import build_world
from tests.conftest import REPO_ROOT

pytestmark = pytest.mark.anyio

CHROMIUM = "/usr/bin/chromium"
# WCAG 2 contrast of every element's own text against its effective background: the lowest ratio
# on the page and where it is.
_LOWEST_CONTRAST = """() => {
  const rgb = (text) => (text.match(/[\\d.]+/g) || []).map(Number);
  const luminance = ([r, g, b]) => {
    const c = [r, g, b].map((v) => {
      v /= 255;
      return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
    });
    return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2];
  };
  const background = (el) => {
    for (let e = el; e; e = e.parentElement) {
      const c = rgb(getComputedStyle(e).backgroundColor);
      if (c.length === 3 || (c.length === 4 && c[3] > 0)) return c.slice(0, 3);
    }
    return [255, 255, 255];
  };
  let worst = {ratio: 99, where: ""};
  for (const el of document.body.querySelectorAll("*")) {
    const own = [...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim());
    if (!own || el.offsetParent === null) continue;
    const a = luminance(rgb(getComputedStyle(el).color)), b = luminance(background(el));
    const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
    if (ratio < worst.ratio) {
      worst = {ratio, where: el.tagName + "." + el.className + ": " + el.textContent.trim().slice(0, 40)};
    }
  }
  return worst;
}"""
ARTIFACTS = REPO_ROOT / "test-artifacts"
LAPTOP = ViewportSize(width=1366, height=768)


@pytest.fixture
async def browser() -> AsyncIterator[Browser]:
    """Headless Chromium from the host (``make host-deps`` installs it); never downloaded."""
    if shutil.which("chromium") is None:
        pytest.fail("Debian's chromium is not installed: run `make host-deps` (as root) first")
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(executable_path=CHROMIUM, headless=True)
        try:
            yield launched
        finally:
            await launched.close()


async def sign_in(page: Page, api: Api, path: str) -> None:
    """Open ``path``; the console sends us to its login form; paste the token."""
    await page.goto(f"{api.address.base_url}{path}")
    await expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    await page.get_by_label("Operator token").fill(api.token)
    await page.get_by_role("button", name="Sign in").click()
    await page.wait_for_url(re.compile(re.escape(path) + "$"))


async def shot(page: Page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    await page.screenshot(path=str(ARTIFACTS / f"console-{name}.png"), full_page=True)


async def test_warning_citation_memory_and_revision_diff(services: Services, browser: Browser) -> None:
    store = services.store
    seeded = seed_review(store)
    async with running_api(services) as api:
        context = await browser.new_context(viewport=LAPTOP)
        page = await context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)

        await sign_in(page, api, f"/proposals/{seeded['proposal_id']}")
        # The session lives in an HttpOnly, SameSite=Strict cookie; the token is nowhere in the page.
        cookies = {c["name"]: c for c in await context.cookies()}
        assert cookies["rt_session"]["httpOnly"] and cookies["rt_session"]["sameSite"] == "Strict"
        assert api.token not in await page.content()
        assert api.token not in page.url

        # The proposal page: the warning, with its citations as links.
        await expect(page.get_by_role("heading", level=1, name="Shout line two")).to_be_visible()
        warnings = page.get_by_role("region", name=re.compile("Oracle warnings"))
        await expect(warnings.get_by_text("Shouting contradicts a recorded decision.")).to_be_visible()
        citation = warnings.get_by_role("link", name="Keep lines quiet")
        await expect(citation).to_have_attribute("href", f"/memories/{seeded['decision_id']}")
        await expect(warnings.get_by_role("link", name="Lower case only")).to_be_visible()
        # Votes, and which of them count.
        votes = page.get_by_role("region", name="Votes")
        await expect(votes.get_by_role("row").filter(has_text="reviewer-1")).to_contain_text("does not count")
        await expect(votes.get_by_role("row").filter(has_text="reviewer-2")).to_contain_text("counts")
        # The current patch version rendered as a diff with added and removed lines marked.
        current = page.locator("details.patch[open]")
        await expect(current.locator(".diff-add").filter(has_text="+four")).to_be_visible()
        await expect(current.locator(".diff-del").filter(has_text="-two")).to_be_visible()
        await shot(page, "proposal")

        # Follow the citation to the memory entry.
        await citation.click()
        await page.wait_for_url(f"**/memories/{seeded['decision_id']}")
        await expect(page.get_by_role("heading", level=1, name="Keep lines quiet")).to_be_visible()
        revisions = page.get_by_role("region", name="Revisions")
        await expect(revisions.get_by_role("row")).to_have_count(3)  # header + r1 + r2

        # Compare revision 1 with revision 2.
        await page.get_by_label("From", exact=True).select_option("1")
        await page.get_by_label("To", exact=True).select_option("2")
        await page.get_by_role("button", name="Compare").click()
        await page.wait_for_url(re.compile(r"from=1&to=2"))
        await expect(page.get_by_role("heading", name="Revision 1 → revision 2")).to_be_visible()
        diff = page.get_by_role("figure", name="Changes from revision 1 to revision 2")
        await expect(diff.locator(".diff-add").filter(has_text="+Not even line two.")).to_be_visible()
        added = await diff.locator(".diff-add").first.evaluate("e => getComputedStyle(e).backgroundColor")
        removed_lines = await diff.locator(".diff-del").count()
        assert added != "rgba(0, 0, 0, 0)"
        assert removed_lines == 0  # a line was only added between r1 and r2
        await shot(page, "memory-diff")
        assert not errors, errors


async def test_live_activity_arrives_without_a_reload(services: Services, browser: Browser) -> None:
    store = services.store
    seeded = seed_review(store)
    async with running_api(services) as api:
        page = await (await browser.new_context(viewport=LAPTOP)).new_page()
        await sign_in(page, api, f"/proposals/{seeded['proposal_id']}")
        await expect(page.locator("#live-status")).to_have_text(re.compile("Live"))

        def warn(conn: sqlite3.Connection) -> int:
            return append_event(
                conn,
                "proposal.review_requested",
                actor="operator",
                task_id=seeded["task_id"],
                proposal_id=seeded["proposal_id"],
                payload={"note": "live"},
            ).id

        event_id = store.db.write(warn)  # written by "another process": the poller finds it
        item = page.locator(f'#live-events li[data-event-id="{event_id}"]')
        await expect(item).to_contain_text("proposal.review_requested by operator")
        await expect(page.locator("#live-status")).to_contain_text("1 new event")
        await shot(page, "live")


async def test_the_console_is_accessible_and_readable_on_a_laptop(
    services: Services, browser: Browser
) -> None:
    store = services.store
    seeded = seed_review(store)
    async with running_api(services) as api:
        page = await (await browser.new_context(viewport=LAPTOP)).new_page()
        await sign_in(page, api, "/")
        for path in (
            "/",
            f"/proposals/{seeded['proposal_id']}",
            "/memories",
            f"/memories/{seeded['decision_id']}",
        ):
            await page.goto(f"{api.address.base_url}{path}")
            # Landmarks: one banner, one navigation, one main, one contentinfo; one h1.
            for role in ("banner", "navigation", "main", "contentinfo"):
                await expect(page.get_by_role(role)).to_have_count(1)
            await expect(page.get_by_role("heading", level=1)).to_have_count(1)
            # Every form control has a label (an accessible name); no horizontal scrolling.
            unnamed = await page.evaluate(
                """() => [...document.querySelectorAll('input:not([type=hidden]), select, textarea')]
                     .filter(e => !(e.labels && e.labels.length) && !e.getAttribute('aria-label'))
                     .map(e => e.name)"""
            )
            assert unnamed == [], (path, unnamed)
            overflow = await page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth")
            assert overflow <= 0, (path, overflow)
            assert await page.evaluate("() => document.documentElement.lang") == "en"
            # Text contrast meets WCAG AA (4.5:1) everywhere on the page.
            lowest = await page.evaluate(_LOWEST_CONTRAST)
            assert lowest["ratio"] >= 4.5, (path, lowest)
        # Keyboard users can skip to the content.
        await page.keyboard.press("Tab")
        await expect(page.get_by_role("link", name="Skip to content")).to_be_focused()
        await shot(page, "memory")


async def test_a_warning_shows_confidence_quoted_lines_and_cited_titles(
    services: Services, browser: Browser
) -> None:
    store = services.store
    world = build_world(store)
    quoted = '    return conn.execute(f"SELECT * FROM users WHERE id = {user}")  # <script>alert(1)</script>'
    outcome = await call_tool(
        services,
        build_registry(),
        world.principal,
        "oracle.warn",
        {
            "message_md": "Raw SQL goes against the builder decision.",
            "cited_memory_ids": [world.task_memory, world.project_memory],
            "confidence": 0.87,
            "evidence": [{"path": "app/db.py", "line": 2, "text": quoted}],
            "severity": "critical",
        },
    )
    assert outcome.error is None, outcome.error
    async with running_api(services) as api:
        page = await (await browser.new_context(viewport=LAPTOP)).new_page()
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.on("dialog", lambda dialog: errors.append(f"dialog: {dialog.message}"))
        await sign_in(page, api, f"/proposals/{world.proposal_id}")
        warnings = page.get_by_role("region", name=re.compile("Oracle warnings"))
        card = warnings.locator("article.warning")
        await expect(card.locator(".confidence")).to_have_text("Confidence 0.87")
        line = card.locator("ul.evidence li")
        await expect(line.locator("code.where")).to_have_text("app/db.py:2")
        await expect(line.locator("code.text")).to_have_text(quoted)  # escaped: shown, never run
        family = await line.locator("code.text").evaluate("e => getComputedStyle(e).fontFamily")
        assert "monospace" in family
        for memory_id, title in (
            (world.task_memory, "All SQL via the builder"),
            (world.project_memory, "Parameterised queries"),
        ):
            link = card.get_by_role("link", name=title)
            await expect(link).to_be_visible()
            await expect(link).to_have_attribute("href", f"/memories/{memory_id}")
        await shot(page, "warning-evidence")
        assert await page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth") <= 0
        lowest = await page.evaluate(_LOWEST_CONTRAST)
        assert lowest["ratio"] >= 4.5, lowest
        assert not errors, errors
