"""The console reads well in a real headless Chromium: Markdown rendered and inert under the strict CSP,
outdated warnings after current ones, a launch folded into one timeline row that opens, vote badges
toned by meaning, IDs and timestamps never broken, warnings on the proposals list, the proposals
citing an entry, and oracle summaries folded away. Screenshots in ``test-artifacts/console-*.png``.
"""

from __future__ import annotations

import re

import pytest
from playwright.async_api import Browser, Page, ViewportSize, expect

from capabilities.services import Services
from tests.capabilities.api_helpers import running_api
from tests.capabilities.console.console_world import build_console_world
from tests.e2e.test_console_browser import _LOWEST_CONTRAST, ARTIFACTS, LAPTOP, browser, shot, sign_in

__all__ = ["browser"]  # the fixture, imported for these tests

pytestmark = pytest.mark.anyio

NARROW = ViewportSize(width=760, height=900)
# Every visible ID, agent name, timestamp and badge that a line break split into more than one box.
# The lines a token's text covers are counted from its text's own boxes, so a block element (a <div>
# or a <td>, one box however many lines it holds) is measured as truly as an inline one.
_BROKEN_TOKENS = """() => [...document.querySelectorAll('time, .id, .badge, .token, .actor')]
  .filter((e) => {
    if (e.offsetParent === null) return false;
    const range = document.createRange();
    range.selectNodeContents(e);
    const boxes = [...range.getClientRects()].filter((r) => r.width > 0);
    return new Set(boxes.map((r) => Math.round(r.top))).size > 1;
  })
  .map((e) => e.textContent)"""
# What a hostile text could have left behind: elements that run or load something, handlers, styles.
_ACTIVE_CONTENT = """() => ({
  scripts: [...document.scripts].map((s) => s.getAttribute('src')),
  images: document.images.length,
  handlers: [...document.querySelectorAll('main *')]
    .filter((e) => [...e.attributes].some((a) => a.name.startsWith('on') || a.name === 'style'))
    .map((e) => e.outerHTML.slice(0, 80)),
  unsafeLinks: [...document.querySelectorAll('main a[href]')]
    .map((a) => a.protocol).filter((p) => !['http:', 'https:', 'mailto:'].includes(p)),
})"""


def watch(page: Page) -> list[str]:
    """Page errors, console errors (a CSP violation is one) and any dialog a script opened."""
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.on("dialog", lambda dialog: errors.append(f"dialog: {dialog.message}"))
    return errors


# Every visible token that sticks out of a box holding it: an ancestor, up to the one that scrolls
# on purpose (a table's wrapper) or <main>, whose content is wider than itself.
_OVERFLOWING_TOKENS = """() => [...document.querySelectorAll('time, .id, .badge, .token, .actor')]
  .filter((e) => {
    if (e.offsetParent === null) return false;
    for (let box = e.parentElement; box && box.tagName !== 'MAIN'; box = box.parentElement) {
      const style = getComputedStyle(box);
      if (style.overflowX !== 'visible') return false;
      if (style.display !== 'inline' && box.scrollWidth > box.clientWidth + 1) return true;
    }
    return false;
  })
  .map((e) => e.textContent)"""
# Tables that need scrolling sideways to be read whole (their captions).
_CLIPPED_TABLES = """() => [...document.querySelectorAll('.table-wrap')]
  .filter((e) => e.offsetParent !== null && e.scrollWidth > e.clientWidth + 1)
  .map((e) => e.querySelector('caption').textContent)"""


async def assert_reads_well(page: Page) -> None:
    """No horizontal scrolling, no table cut off, text contrast at least WCAG AA, no token split or
    sticking out of its box."""
    assert await page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth") <= 0
    assert await page.evaluate(_CLIPPED_TABLES) == []
    lowest = await page.evaluate(_LOWEST_CONTRAST)
    assert lowest["ratio"] >= 4.5, lowest
    assert await page.evaluate(_BROKEN_TOKENS) == []
    assert await page.evaluate(_OVERFLOWING_TOKENS) == []


async def test_the_proposal_page_renders_markdown_inertly_and_puts_outdated_warnings_last(
    services: Services, browser: Browser
) -> None:
    world = await build_console_world(services)
    async with running_api(services) as api:
        page = await (await browser.new_context(viewport=LAPTOP)).new_page()
        errors = watch(page)
        await sign_in(page, api, f"/proposals/{world.proposal_id}")
        warnings = page.get_by_role("region", name=re.compile("Oracle warnings"))
        await expect(warnings.get_by_role("heading", level=2)).to_have_text("Oracle warnings (2, 1 outdated)")
        cards = warnings.locator("article.warning")
        await expect(cards).to_have_count(2)
        current, outdated = cards.nth(0), cards.nth(1)
        heading = current.get_by_role("heading", level=3)
        await expect(heading).to_have_text("critical Oracle warning on patch v2")
        await expect(outdated).to_have_class(re.compile("warning-outdated"))
        await expect(outdated.get_by_role("heading", level=3)).to_contain_text("outdated the patch is now v2")
        # Markdown rendered: bold is bold, code is monospace, the markup characters are gone.
        strong = current.locator(".message strong")
        await expect(strong).to_have_text("Check against")
        assert int(await strong.evaluate("e => getComputedStyle(e).fontWeight")) >= 600
        family = await current.locator(".message code").evaluate("e => getComputedStyle(e).fontFamily")
        assert "mono" in family
        await expect(current.locator(".message")).not_to_contain_text("**")
        # The injection attempts are text on the page, and nothing of them runs or loads.
        await expect(current.locator(".message")).to_contain_text("<script>alert('x')</script>")
        await expect(current.locator(".message")).to_contain_text("[bad](javascript:alert(1))")
        active = await page.evaluate(_ACTIVE_CONTENT)
        assert active == {"scripts": ["/static/console.js"], "images": 0, "handlers": [], "unsafeLinks": []}

        # Votes: against, for and neither look different, whatever the word.
        votes = page.get_by_role("region", name="Votes")
        colours = {
            word: await votes.locator(".vote", has_text=word).first.evaluate(
                "e => getComputedStyle(e).backgroundColor + ' ' + getComputedStyle(e).borderColor"
            )
            for word in ("revise", "approve", "abstain")
        }
        assert len(set(colours.values())) == 3, colours
        await expect(votes.get_by_role("row").filter(has_text="revise").locator("strong")).to_have_text(
            "Shouting"
        )
        await assert_reads_well(page)
        await shot(page, "proposal-markdown")
        assert errors == [], errors


async def test_the_timeline_folds_a_launch_into_a_row_that_opens(
    services: Services, browser: Browser
) -> None:
    world = await build_console_world(services)
    async with running_api(services) as api:
        page = await (await browser.new_context(viewport=LAPTOP)).new_page()
        errors = watch(page)
        await sign_in(page, api, f"/proposals/{world.proposal_id}")
        timeline = page.locator("ol.timeline")
        group = timeline.locator("details.launch-group")
        await expect(group).to_have_count(1)
        summary = group.locator("summary")
        await expect(summary).to_contain_text("reviewer-1 (reviewer) ran my-agent:7 via mcp")
        await expect(summary).to_contain_text("exited 0")
        await expect(summary).to_contain_text("7 steps")
        steps = group.locator("ol.launch-steps > li")
        await expect(steps.first).to_be_hidden()  # closed until asked
        await expect(timeline.locator(":scope > li > .type", has_text="role.started")).to_have_count(0)
        await summary.click()
        await expect(steps).to_have_count(7)
        await expect(steps.filter(has_text="role.started")).to_be_visible()
        await expect(steps.filter(has_text="capability.revoked")).to_contain_text("launch_ended")
        # The launched reviewer's vote keeps its launch beside it; the status change reads from → to.
        vote = timeline.locator(":scope > li", has_text="reviewer-1 voted revise")
        await expect(vote).to_contain_text("launched my-agent:7 (mcp)")
        await expect(timeline.locator(".change")).to_have_text("in_review → revision_requested")
        await assert_reads_well(page)
        ARTIFACTS.mkdir(exist_ok=True)
        await timeline.screenshot(path=str(ARTIFACTS / "console-timeline-launch.png"))
        # A warning's citations are links in the timeline too.
        warning = timeline.locator(":scope > li", has_text="oracle warning on v2")
        await warning.get_by_role("link", name="Shouting rules").click()
        await page.wait_for_url(f"**/memories/{world.rules_id}")
        assert errors == [], errors


async def test_the_proposals_list_shows_warnings_and_ids_never_break(
    services: Services, browser: Browser
) -> None:
    world = await build_console_world(services)
    async with running_api(services) as api:
        page = await (await browser.new_context(viewport=LAPTOP)).new_page()
        errors = watch(page)
        await sign_in(page, api, "/")
        rows = page.get_by_role("row")
        warned = rows.filter(has=page.get_by_role("link", name="Shout line two"))
        await expect(warned.locator(".warnings-cell")).to_have_text("1 warning 1 outdated")
        quiet = rows.filter(has=page.get_by_role("link", name="A quiet one"))
        await expect(quiet.locator(".warnings-cell")).to_have_text("none")
        await assert_reads_well(page)
        await shot(page, "proposals-warnings")
        # On a narrow window the table reflows, but no ID or timestamp is split at its hyphens.
        await page.set_viewport_size(NARROW)
        for path in ("/", f"/proposals/{world.proposal_id}", f"/memories/{world.decision_id}", "/memories"):
            await page.goto(f"{api.address.base_url}{path}")
            assert await page.evaluate(_BROKEN_TOKENS) == [], path
            assert await page.evaluate(_OVERFLOWING_TOKENS) == [], path
        await page.goto(f"{api.address.base_url}/")
        await shot(page, "proposals-narrow")
        assert errors == [], errors


async def test_an_entry_shows_its_markdown_and_the_proposals_citing_it(
    services: Services, browser: Browser
) -> None:
    world = await build_console_world(services)
    async with running_api(services) as api:
        page = await (await browser.new_context(viewport=LAPTOP)).new_page()
        errors = watch(page)
        await sign_in(page, api, f"/memories/{world.rules_id}")
        body = page.locator("div.memory-body")
        await expect(body.get_by_role("heading", level=3, name="Why")).to_be_visible()
        await expect(body.get_by_role("listitem")).to_have_text(["never shout", "lower case only"])
        await expect(body).to_contain_text("<script>alert('x')</script>")
        await expect(page.get_by_role("heading", level=1)).to_have_count(1)
        assert (await page.evaluate(_ACTIVE_CONTENT))["images"] == 0
        cited = page.get_by_role("region", name=re.compile("Cited by proposals"))
        await expect(cited.get_by_role("row").filter(has_text="Shout line two")).to_contain_text(
            "1 warning · 1 on the current patch (v2)"
        )
        await assert_reads_well(page)
        await shot(page, "memory-markdown-cited")
        await cited.get_by_role("link", name="Shout line two").click()
        await page.wait_for_url(f"**/proposals/{world.proposal_id}")
        assert errors == [], errors


async def test_the_memory_list_folds_oracle_summaries_away(services: Services, browser: Browser) -> None:
    world = await build_console_world(services)
    async with running_api(services) as api:
        page = await (await browser.new_context(viewport=LAPTOP)).new_page()
        errors = watch(page)
        await sign_in(page, api, "/memories")
        listed = page.get_by_role("table", name="Memory entries, oldest first")
        await expect(listed.get_by_role("link", name="Keep lines quiet")).to_be_visible()
        await expect(listed.get_by_role("link", name="Oracle notes on v2")).to_have_count(0)
        folded = page.locator("details.oracle-summaries")
        summary_link = folded.get_by_role("link", name="Oracle notes on v2")
        await expect(summary_link).to_be_hidden()
        await shot(page, "memory-list-folded")
        await folded.locator("summary").click()
        await expect(summary_link).to_be_visible()
        await expect(folded.get_by_role("link", name=world.proposal_id)).to_be_visible()
        await assert_reads_well(page)
        await shot(page, "memory-list-summaries-open")
        assert errors == [], errors
