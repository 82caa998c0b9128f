"""What the console's pages show, over real HTTP: Markdown rendered and inert, outdated warnings after
current ones, a launch folded into one timeline row, status changes as from → to, citations as
links, warnings on the proposals list, the proposals citing an entry, oracle summaries folded away,
and vote badges toned by what the vote means."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx2
import pytest

from capabilities.console._html import when
from capabilities.console._widgets import vote_badge
from capabilities.services import Services
from store.work import Vote
from tests.capabilities.api_helpers import running_api, seed_review
from tests.capabilities.console.console_world import ConsoleWorld, build_console_world
from tests.capabilities.console.test_console_http import browser_like, log_in

pytestmark = pytest.mark.anyio

# Today's policy, written out: a change that loosens it (inline script or style, another origin) fails.
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)


@asynccontextmanager
async def console(services: Services) -> AsyncIterator[tuple[ConsoleWorld, httpx2.AsyncClient]]:
    world = await build_console_world(services)
    async with running_api(services) as api, browser_like(api) as client:
        await log_in(client, api.token)
        yield world, client


async def page_of(client: httpx2.AsyncClient, path: str) -> str:
    answer = await client.get(path)
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-security-policy"] == CSP
    return answer.text


def between(page: str, start: str, end: str) -> str:
    """The part of ``page`` from ``start`` up to the next ``end``."""
    begin = page.index(start)
    return page[begin : page.index(end, begin)]


def assert_injections_inert(page: str) -> None:
    assert "<script>alert" not in page and "<img" not in page and "onerror=alert(1)>" not in page
    assert 'href="javascript:' not in page.lower()
    assert "&lt;script&gt;alert('x')&lt;/script&gt;" in page  # shown as text, never run


async def test_markdown_is_rendered_and_injections_stay_text(services: Services) -> None:
    async with console(services) as (world, client):
        page = await page_of(client, f"/proposals/{world.proposal_id}")
        warnings = between(page, 'aria-labelledby="warnings-h"', "</section>")
        assert (
            '<div class="message md"><p><strong>Check against</strong> the decision:'
            " <code>TWO</code> shouts.</p>" in warnings
        )
        votes = between(page, 'aria-labelledby="votes-h"', "</section>")
        assert "<strong>Shouting</strong> breaks <code>lower case</code>." in votes
        assert "<em>not my area</em>" in votes
        timeline = between(page, '<ol class="timeline">', '<div class="live"')
        assert "<strong>Check against</strong> the decision: <code>TWO</code> shouts." in timeline
        assert "**" not in page
        assert_injections_inert(page)


async def test_outdated_warnings_come_after_the_current_ones(services: Services) -> None:
    async with console(services) as (world, client):
        page = await page_of(client, f"/proposals/{world.proposal_id}")
    warnings = between(page, 'aria-labelledby="warnings-h"', "</section>")
    assert "Oracle warnings (2, 1 outdated)</h2>" in warnings
    new = between(warnings, f'aria-labelledby="warning-{world.new_warning_event}"', "</article>")
    old = between(warnings, f'aria-labelledby="warning-{world.old_warning_event}"', "</article>")
    assert warnings.index(new) < warnings.index("made on earlier patch versions") < warnings.index(old)
    assert "outdated" not in new
    assert 'class="warning warning-warning warning-outdated"' in warnings
    assert '<span class="badge badge-muted">outdated</span>' in old and "the patch is now v2" in old


async def test_only_outdated_warnings_say_the_current_patch_has_none(services: Services) -> None:
    seeded = seed_review(services.store)  # its one warning is on v1; the patch is at v2
    async with running_api(services) as api, browser_like(api) as client:
        await log_in(client, api.token)
        page = await page_of(client, f"/proposals/{seeded['proposal_id']}")
    assert "No warnings on the current patch, v2." in page
    assert "1 warning made on earlier patch versions" in page


async def test_a_launch_is_one_timeline_row_that_opens_on_its_steps(services: Services) -> None:
    async with console(services) as (world, client):
        page = await page_of(client, f"/proposals/{world.proposal_id}")
        events = services.store.timeline.timeline(world.proposal_id)["events"]
    timeline = between(page, '<ol class="timeline">', '<div class="live"')
    assert timeline.count('<details class="launch-group">') == 1
    group = between(timeline, '<details class="launch-group">', "</details>")
    summary = between(group, "<summary>", "</summary>")
    for fact in (
        "reviewer-1 (reviewer)",
        "<code>my-agent:7</code> via mcp",
        "from request to end",
        '<span class="badge badge-good">exited 0</span>',
        "3 model requests, 1200 tokens",
        "· 7 steps",
        world.launch_id,
    ):
        assert fact in summary, (fact, summary)
    steps = re.findall(r'<span class="type">([a-z_.]+)</span>', between(group, "<ol", "</ol>"))
    assert steps == [
        "role.launch_requested",
        "capability.granted",
        "role.container_created",
        "role.started",
        "role.model_usage",
        "role.exited",
        "capability.revoked",
    ]
    outside = timeline.replace(group, "")
    rows = re.findall(r'<span class="type">([a-z_.]+)</span>', outside)
    assert not [row for row in rows if row.startswith("role.")]
    assert rows.count("capability.granted") == 1  # the oracle's grant, of no launch
    assert len(rows) == len(events) - len(steps)  # every other event keeps its own row
    # The launched reviewer's vote still names its launch beside it.
    (vote,) = [row for row in outside.split("<li ") if "reviewer-1 voted" in row and ">revise<" in row]
    assert "launched my-agent:7 (mcp)" in vote and "exited 0" in vote


async def test_status_changes_read_from_to_and_citations_are_links(services: Services) -> None:
    async with console(services) as (world, client):
        page = await page_of(client, f"/proposals/{world.proposal_id}")
    timeline = between(page, '<ol class="timeline">', '<div class="live"')
    assert (
        '<span class="change"><span class="badge badge-info">in_review</span> → '
        '<span class="badge badge-warn">revision_requested</span></span> (approvals 0/2)'
    ) in timeline
    rows = [row for row in timeline.split("<li ") if "memory.oracle_warning" in row]
    assert len(rows) == 2
    for row, cited in (
        (rows[0], [(world.decision_id, "Keep lines quiet"), (None, "Lower case only")]),
        (rows[1], [(world.decision_id, "Keep lines quiet"), (world.rules_id, "Shouting rules")]),
    ):
        for memory_id, title in cited:
            href = f"/memories/{memory_id}" if memory_id else "/memories/M-"
            assert f'<a class="memory-link" href="{href}' in row and f">{title}</a>" in row, row


def test_vote_badges_are_toned_by_what_the_vote_means() -> None:
    tone = {vote: re.search(r"badge-(\w+)", vote_badge(vote)).group(1) for vote in Vote}  # type: ignore[union-attr]
    assert tone[Vote.REJECT] == tone[Vote.VETO] == tone[Vote.REVISE] == "bad"
    assert tone[Vote.APPROVE] == tone[Vote.APPROVE_WITH_NOTES] == "good"
    assert tone[Vote.ABSTAIN] == "neutral"


async def test_the_votes_table_tones_each_vote(services: Services) -> None:
    async with console(services) as (world, client):
        page = await page_of(client, f"/proposals/{world.proposal_id}")
    votes = between(page, 'aria-labelledby="votes-h"', "</section>")
    assert '<span class="badge badge-bad vote vote-bad">revise</span>' in votes
    assert '<span class="badge badge-good vote vote-good">approve</span>' in votes
    assert '<span class="badge badge-neutral vote vote-neutral">abstain</span>' in votes


async def test_the_proposals_list_shows_warnings(services: Services) -> None:
    async with console(services) as (world, client):
        page = await page_of(client, "/")
    assert '<th scope="col">Oracle warnings</th>' in page
    warned = between(page, f'href="/proposals/{world.proposal_id}"', "</tr>")
    assert (
        '<td class="warnings-cell"><span class="badge badge-bad">1 warning</span> '
        '<span class="badge badge-muted">1 outdated</span></td>'
    ) in warned
    quiet = between(page, f'href="/proposals/{world.quiet_proposal_id}"', "</tr>")
    assert '<td class="warnings-cell"><span class="none">none</span></td>' in quiet


async def test_a_memory_body_is_rendered_markdown(services: Services) -> None:
    async with console(services) as (world, client):
        page = await page_of(client, f"/memories/{world.rules_id}")
    body = between(page, '<div class="memory-body', "</div>")
    assert "<h3>Why</h3>" in body and "<li><strong>never</strong> shout</li>" in body
    assert "<blockquote>\n<p>quoted</p>\n</blockquote>" in body
    assert page.count("<h1") == 1  # the body's "# Why" does not compete with the page's title
    assert_injections_inert(body)
    assert "# Why" in page  # the revise form still holds the Markdown source, escaped


async def test_an_entry_lists_the_proposals_citing_it(services: Services) -> None:
    async with console(services) as (world, client):
        pages = {
            memory_id: between(await page_of(client, f"/memories/{memory_id}"), 'id="cited-h"', "</section>")
            for memory_id in (world.decision_id, world.rules_id, world.uncited_id)
        }
    decision = pages[world.decision_id]
    assert "Cited by proposals (1)</h2>" in decision
    assert f'<a href="/proposals/{world.proposal_id}">Shout line two</a>' in decision
    assert "2 warnings · 1 on the current patch (v2)" in decision
    assert "1 warning · 1 on the current patch (v2)" in pages[world.rules_id]
    assert "Cited by proposals (0)</h2>" in pages[world.uncited_id]
    assert "No oracle warning cites this entry." in pages[world.uncited_id]


async def test_a_merged_entry_lists_the_proposals_citing_its_aliases(services: Services) -> None:
    async with console(services) as (world, client):
        merged = services.store.memory_admin.merge(world.uncited_id, world.decision_id, actor="op")
        canonical = merged.body["memory"]["id"]
        cited = between(await page_of(client, f"/memories/{canonical}"), 'id="cited-h"', "</section>")
    assert "Cited by proposals (1)</h2>" in cited and "or one of its aliases" in cited
    assert "2 warnings · 1 on the current patch (v2)" in cited


async def test_oracle_summaries_are_folded_away_from_the_memory_list(services: Services) -> None:
    async with console(services) as (world, client):
        operators = services.store.memory.record(
            scope="project", kind="summary", title="An operator's summary", body_md="x", actor="op"
        )
        page = await page_of(client, "/memories")
        only = await page_of(client, "/memories?kind=summary")
    listed = between(page, "<table>", "</table>")
    assert world.summary_id not in listed and world.decision_id in listed
    assert operators.id in listed  # not the oracle's: written without a proposal
    folded = between(page, '<details class="oracle-summaries">', "</details>")
    assert "<summary>1 oracle summary on this page, folded away</summary>" in folded
    assert world.summary_id in folded and f'href="/proposals/{world.proposal_id}"' in folded
    assert world.summary_id in between(only, "<table>", "</table>")
    assert "oracle-summaries" not in only


def test_a_timestamp_shows_to_the_second_and_keeps_its_full_value() -> None:
    full = "2026-12-01T13:56:51.123456Z"
    assert when(full) == f'<time datetime="{full}" title="{full}">2026-12-01 13:56:51</time>'
    assert when("<b>") == '<time datetime="&lt;b&gt;" title="&lt;b&gt;">&lt;b&gt;</time>'
    assert when(None) == '<time datetime="" title=""></time>'
