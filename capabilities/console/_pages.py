"""The console's proposal pages: the proposals list and one proposal with its votes, warnings and patch.

Each handler reads through the same store calls as the HTTP API (so the console shows exactly
what the API answers) and renders HTML with :mod:`capabilities.console._widgets`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from capabilities.console._forms import feedback_widget
from capabilities.console._html import Markup, attr_url, html, join, when
from capabilities.console._markdown import render_markdown
from capabilities.console._timeline import timeline_items
from capabilities.console._widgets import (
    badge,
    consensus_summary,
    diff_block,
    is_outdated,
    next_page,
    table,
    vote_badge,
    warning_card,
)
from capabilities.http_api import proposal_detail
from store import Store
from store.errors import RoundtableError

__all__ = ["proposal_page", "proposals_page"]

_WARNING = "memory.oracle_warning"
_EVENT_PAGE = 500  # the event feed's largest page
_SEVERITY_RANK = {"info": 0, "warning": 1, "critical": 2}


# -- proposals -------------------------------------------------------------------------------------


def _warnings_of(store: Store, proposal_id: str) -> list[dict[str, Any]]:
    """A proposal's oracle warnings, oldest first (read through the proposal's index)."""
    found: list[dict[str, Any]] = []
    after = 0
    while True:
        page = store.event_feed.after(after, limit=_EVENT_PAGE, proposal_id=proposal_id, types=(_WARNING,))
        found += [event.to_dict() for event in page]
        if len(page) < _EVENT_PAGE:
            return found
        after = page[-1].id


def _warnings_cell(warnings: list[dict[str, Any]], current_version: int) -> Markup:
    """``2 warnings`` (toned by the gravest) on the current patch, and how many are outdated."""
    current = [w for w in warnings if not is_outdated(w, current_version)]
    outdated = len(warnings) - len(current)
    if not warnings:
        return html('<span class="none">none</span>')
    parts = []
    if current:
        gravest = max(
            (str((w.get("payload") or {}).get("severity") or "warning") for w in current),
            key=lambda severity: _SEVERITY_RANK.get(severity, 1),
        )
        parts.append(badge(f"{len(current)} warning{'s' if len(current) != 1 else ''}", tone=_tone(gravest)))
    if outdated:
        parts.append(badge(f"{outdated} outdated", tone="muted"))
    return join(parts, " ")


def _tone(severity: str) -> str:
    return {"critical": "bad", "info": "info"}.get(severity, "warn")


def proposals_page(store: Store, *, cursor: str | None) -> tuple[str, Markup]:
    """The list of proposals with status, consensus and their oracle warnings."""
    items, next_position = store.proposals.list(limit=50, cursor=cursor or None)
    rows = [
        html(
            '<tr><td><a href="$href">$title</a><div class="id">$id</div></td><td>$status</td>'
            '<td class="token">v$version</td><td class="warnings-cell">$warnings</td><td>$consensus</td>'
            '<td class="token">$author</td>'
            "<td>$at</td></tr>",
            href=f"/proposals/{p['id']}",
            title=p["title"],
            id=p["id"],
            status=badge(p["status"]),
            version=p["current_version"],
            warnings=_warnings_cell(_warnings_of(store, p["id"]), p["current_version"]),
            consensus=consensus_summary(p["consensus"]),
            author=p["agent_id"],
            at=when(p["updated_at"]),
        )
        for p in items
    ]
    more = next_page(attr_url("/", cursor=next_position) if next_position else None)
    body = html(
        "<h1>Proposals</h1>$table$more",
        table=table(
            "Proposals, oldest first",
            ["Proposal", "Status", "Patch", "Oracle warnings", "Consensus", "Author", "Updated (UTC)"],
            rows,
            empty="No proposals yet.",
        ),
        more=more,
    )
    return "Proposals", body


def _warning_count(warnings: list[dict[str, Any]], current_version: int) -> str:
    outdated = sum(1 for w in warnings if is_outdated(w, current_version))
    return f"{len(warnings)}, {outdated} outdated" if outdated else str(len(warnings))


def _warnings_section(
    warnings: list[dict[str, Any]], current_version: int, feedback: Callable[[dict[str, Any]], Markup]
) -> Markup:
    """The warnings on the current patch version first; then, marked outdated, the older ones
    (the newest version first), since the patch they read has changed."""
    if not warnings:
        return html('<p class="empty">No warnings.</p>')
    current = [w for w in warnings if not is_outdated(w, current_version)]
    older = sorted(
        (w for w in warnings if is_outdated(w, current_version)),
        key=lambda w: -int((w.get("payload") or {}).get("patch_version") or 0),
    )
    cards = [join((warning_card(w, current_version=current_version), feedback(w))) for w in current]
    if not current:
        cards.append(html('<p class="empty">No warnings on the current patch, v$v.</p>', v=current_version))
    if older:
        cards.append(
            html(
                '<p class="note outdated-intro">$n made on earlier patch versions (outdated: the patch'
                " has changed since, so they may no longer apply):</p>",
                n=f"{len(older)} warning{'s' if len(older) != 1 else ''}",
            )
        )
        cards += [join((warning_card(w, current_version=current_version), feedback(w))) for w in older]
    return join(cards)


def _votes_table(votes: list[dict[str, Any]]) -> Markup:
    rows = [
        html(
            '<tr><td class="token">$agent</td><td>$role</td><td>$vote</td><td class="token">v$version</td>'
            "<td>$counts</td><td>$reason</td></tr>",
            agent=v["agent_id"],
            role=v["role"],
            vote=vote_badge(v["vote"]),
            version=v["patch_version"],
            counts=badge("counts", tone="good") if v["counts"] else badge("does not count", tone="muted"),
            reason=html('<div class="md">$md</div>', md=render_markdown(v.get("reason_md"), heading=5)),
        )
        for v in votes
    ]
    return table(
        "Votes, in the order cast; only votes on the current patch version count",
        ["Reviewer", "Role", "Vote", "Patch", "Counts?", "Reason"],
        rows,
        empty="No votes yet.",
    )


def _patch_section(store: Store, proposal: dict[str, Any]) -> Markup:
    blocks = []
    for version in reversed(proposal.get("versions") or []):
        number = version["version"]
        try:
            _, data = store.proposals.patch(proposal["id"], number)
            rendered = diff_block(data.decode("utf-8", "replace"), label=f"Patch version {number}")
        except RoundtableError as exc:
            rendered = html('<p class="error">Cannot show this version: $msg</p>', msg=exc.message)
        current = number == proposal["current_version"]
        blocks.append(
            html(
                '<details class="patch"$open><summary>Patch v$n$current · $size bytes · '
                '<span class="id">sha256 $sha</span></summary><p>Files: $files</p>$diff</details>',
                open=Markup(" open") if current else Markup(""),
                n=number,
                current=" (current)" if current else "",
                size=version["size_bytes"],
                sha=version["sha256"][:16],
                files=", ".join(version["files"]) or "none",
                diff=rendered,
            )
        )
    return join(blocks) or html('<p class="empty">No patch versions.</p>')


def proposal_page(store: Store, proposal_id: str, *, csrf: str = "") -> tuple[str, Markup, int]:
    """One proposal: warnings, consensus, votes, patch versions and the timeline."""
    detail = proposal_detail(store, proposal_id)
    timeline = store.timeline.timeline(proposal_id)
    proposal = detail["proposal"]
    events = timeline["events"]
    last_id = max((int(e["id"]) for e in events), default=0)
    feedback = feedback_widget(store, proposal_id, csrf)
    warnings = [e for e in events if e["type"] == _WARNING]
    body = html(
        '<h1>$title</h1><p class="subtitle"><span class="id">$id</span> $status by $author · task '
        '<span class="id">$task</span> · risk $risk</p>'
        '<section aria-labelledby="consensus-h"><h2 id="consensus-h">Consensus</h2>'
        "<p>$consensus</p></section>"
        '<section aria-labelledby="warnings-h"><h2 id="warnings-h">Oracle warnings ($nwarn)</h2>'
        '<p class="note">Advice from the MemoryOracle, citing project memory. It cannot vote.</p>'
        "$warnings</section>"
        '<section aria-labelledby="votes-h"><h2 id="votes-h">Votes</h2>$votes</section>'
        '<section aria-labelledby="patch-h"><h2 id="patch-h">Patch versions</h2>$patches</section>'
        '<section aria-labelledby="timeline-h"><h2 id="timeline-h">Timeline</h2>'
        '<p class="note">Oldest first; times in UTC.</p><ol class="timeline">$timeline</ol>'
        '<div class="live" aria-live="polite"><h3>Live activity</h3><ul id="live-events"></ul>'
        '<p id="live-status" class="note">Listening for new events…</p></div></section>',
        title=proposal["title"],
        id=proposal["id"],
        status=badge(proposal["status"]),
        author=proposal["agent_id"],
        task=proposal["task_id"],
        risk=proposal["risk"],
        consensus=consensus_summary(detail["consensus"]),
        nwarn=_warning_count(warnings, proposal["current_version"]),
        warnings=_warnings_section(warnings, proposal["current_version"], feedback),
        votes=_votes_table(detail["votes"]),
        patches=_patch_section(store, proposal),
        timeline=timeline_items(events),
    )
    return proposal["title"], body, last_id


# -- memory ----------------------------------------------------------------------------------------
