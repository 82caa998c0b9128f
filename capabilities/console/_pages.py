"""The console's proposal pages: the proposals list and one proposal with its votes, warnings and patch.

Each handler reads through the same store calls as the HTTP API (so the console shows exactly
what the API answers) and renders HTML with :mod:`capabilities.console._widgets`.
"""

from __future__ import annotations

from typing import Any

from capabilities.console._forms import feedback_widget
from capabilities.console._html import Markup, attr_url, html, join
from capabilities.console._widgets import (
    badge,
    consensus_summary,
    diff_block,
    next_page,
    table,
    timeline_item,
    warning_card,
)
from capabilities.http_api import proposal_detail
from store import Store
from store.errors import RoundtableError

__all__ = ["proposal_page", "proposals_page"]


# -- proposals -------------------------------------------------------------------------------------


def proposals_page(store: Store, *, cursor: str | None) -> tuple[str, Markup]:
    """The list of proposals with status and consensus."""
    items, next_position = store.proposals.list(limit=50, cursor=cursor or None)
    rows = [
        html(
            '<tr><td><a href="$href">$title</a><div class="id">$id</div></td><td>$status</td>'
            "<td>v$version</td><td>$consensus</td><td>$author</td>"
            '<td><time datetime="$at">$at</time></td></tr>',
            href=f"/proposals/{p['id']}",
            title=p["title"],
            id=p["id"],
            status=badge(p["status"]),
            version=p["current_version"],
            consensus=consensus_summary(p["consensus"]),
            author=p["agent_id"],
            at=p["updated_at"],
        )
        for p in items
    ]
    more = next_page(attr_url("/", cursor=next_position) if next_position else None)
    body = html(
        "<h1>Proposals</h1>$table$more",
        table=table(
            "Proposals, oldest first",
            ["Proposal", "Status", "Patch", "Consensus", "Author", "Updated"],
            rows,
            empty="No proposals yet.",
        ),
        more=more,
    )
    return "Proposals", body


def _votes_table(votes: list[dict[str, Any]]) -> Markup:
    rows = [
        html(
            "<tr><td>$agent</td><td>$role</td><td>$vote</td><td>v$version</td><td>$counts</td><td>$reason</td></tr>",
            agent=v["agent_id"],
            role=v["role"],
            vote=badge(v["vote"], tone="neutral"),
            version=v["patch_version"],
            counts=badge("counts", tone="good") if v["counts"] else badge("does not count", tone="muted"),
            reason=v.get("reason_md", ""),
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
    warnings = [e for e in events if e["type"] == "memory.oracle_warning"]
    last_id = max((int(e["id"]) for e in events), default=0)
    feedback = feedback_widget(store, proposal_id, csrf)
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
        '<ol class="timeline">$timeline</ol>'
        '<div class="live" aria-live="polite"><h3>Live activity</h3><ul id="live-events"></ul>'
        '<p id="live-status" class="note">Listening for new events…</p></div></section>',
        title=proposal["title"],
        id=proposal["id"],
        status=badge(proposal["status"]),
        author=proposal["agent_id"],
        task=proposal["task_id"],
        risk=proposal["risk"],
        consensus=consensus_summary(detail["consensus"]),
        nwarn=len(warnings),
        warnings=join(join((warning_card(w), feedback(w))) for w in warnings)
        or html('<p class="empty">No warnings.</p>'),
        votes=_votes_table(detail["votes"]),
        patches=_patch_section(store, proposal),
        timeline=join(timeline_item(e) for e in events),
    )
    return proposal["title"], body, last_id


# -- memory ----------------------------------------------------------------------------------------
