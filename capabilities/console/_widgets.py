"""Pieces of console pages: tables, badges, rendered diffs, warnings, memory links.

Every function returns :class:`~capabilities.console.html.Markup` built with
:func:`~capabilities.console.html.html`, so every value from the store is escaped.
"""

from __future__ import annotations

from typing import Any

from capabilities.console._html import Markup, attr_url, html, join, when
from capabilities.console._markdown import render_markdown

__all__ = [
    "badge",
    "citation_links",
    "consensus_summary",
    "diff_block",
    "is_outdated",
    "memory_link",
    "next_page",
    "table",
    "vote_badge",
    "warning_card",
]

_STATUS_TONE = {
    "accepted": "good",
    "applied": "good",
    "active": "good",
    "completed": "good",
    "rejected": "bad",
    "withdrawn": "muted",
    "failed": "bad",
    "stale": "warn",
    "archived": "muted",
    "merged": "muted",
    "revision_requested": "warn",
    "in_review": "info",
    "pending": "info",
    "requested": "info",
    "critical": "bad",
    "warning": "warn",
    "info": "info",
}


# Votes against the patch (blocking or asking for changes), for it, and neither.
_VOTE_TONE = {
    "reject": "bad",
    "veto": "bad",
    "revise": "bad",
    "approve": "good",
    "approve_with_notes": "good",
    "abstain": "neutral",
}


def badge(text: Any, *, tone: str | None = None) -> Markup:
    """A status word in a coloured pill (the word itself carries the meaning, not the colour)."""
    chosen = tone or _STATUS_TONE.get(str(text), "neutral")
    return html('<span class="badge badge-$tone">$text</span>', tone=chosen, text=text)


def vote_badge(vote: Any) -> Markup:
    """A vote word: against the patch (reject, veto, revise), for it (approve), or neither."""
    return html(
        '<span class="badge badge-$tone vote vote-$tone">$vote</span>',
        tone=_VOTE_TONE.get(str(vote), "neutral"),
        vote=vote,
    )


def consensus_summary(consensus: dict[str, Any]) -> Markup:
    """``2 of 2 approvals · reached`` with blocking votes and missing roles spelled out."""
    parts = [
        html(
            "$approvals of $required counting approvals",
            approvals=consensus.get("approvals", 0),
            required=consensus.get("required", 0),
        ),
        badge("consensus reached", tone="good")
        if consensus.get("reached")
        else badge("no consensus", tone="warn"),
    ]
    blocking = consensus.get("blocking") or []
    if blocking:
        parts.append(html("$n blocking", n=len(blocking)))
    missing = consensus.get("missing_roles") or []
    if missing:
        parts.append(html("needs: $roles", roles=", ".join(str(role) for role in missing)))
    return join(parts, " · ")


def _line_class(line: str) -> str:
    if line.startswith(
        ("+++", "---", "diff ", "index ", "new file", "deleted file", "similarity", "rename ")
    ):
        return "meta"
    if line.startswith("@@"):
        return "hunk"
    if line.startswith("+"):
        return "add"
    if line.startswith("-"):
        return "del"
    return "ctx"


def diff_block(text: str, *, label: str) -> Markup:
    """A unified diff with added lines green and removed lines red (the +/- stay visible)."""
    if not text:
        return html('<p class="empty">No differences.</p>')
    lines = join(
        html('<span class="diff-$kind">$line</span>', kind=_line_class(line), line=line)
        for line in text.rstrip("\n").split("\n")
    )
    return html(
        '<figure class="diff-figure"><figcaption>$label</figcaption>'
        '<pre class="diff" tabindex="0"><code>$lines</code></pre></figure>',
        label=label,
        lines=lines,
    )


def memory_link(
    memory_id: str, title: str | None = None, *, status: str | None = None, with_id: bool = True
) -> Markup:
    """A link to a memory entry's console page (titled: with the ID beside it, unless not ``with_id``)."""
    link = html(
        '<a class="memory-link" href="$href">$text</a>',
        href=attr_url(f"/memories/{memory_id}"),
        text=title or memory_id,
    )
    if title and with_id:
        link = html('$link <span class="id">$id</span>', link=link, id=memory_id)
    if status and status != "active":
        link = html("$link $badge", link=link, badge=badge(status))
    return link


def _confidence(payload: dict[str, Any]) -> Markup:
    value = payload.get("confidence")
    if isinstance(value, int | float) and not isinstance(value, bool):
        return html('<p class="confidence">Confidence <strong>$value</strong></p>', value=f"{value:.2f}")
    return html('<p class="confidence">Confidence not given</p>')


def _evidence(payload: dict[str, Any]) -> Markup:
    """The patch lines a warning quotes, as ``path:line`` and the line's text, in monospace."""
    items = [e for e in payload.get("evidence") or [] if isinstance(e, dict)]
    if not items:
        return Markup("")
    lines = join(
        html(
            '<li><code class="where">$path:$line</code> <code class="text">$text</code></li>',
            path=item.get("path", "?"),
            line=item.get("line", "?"),
            text=item.get("text", ""),
        )
        for item in items
    )
    return html('<h4>Quoted patch lines</h4><ul class="evidence">$lines</ul>', lines=lines)


def citation_links(event: dict[str, Any], *, with_ids: bool = True) -> list[Markup]:
    """Each memory entry a warning cites: a link titled with the entry's title, or marked missing."""
    payload = event.get("payload") or {}
    cited = event.get("cited_memories") or [{"id": m} for m in payload.get("cited_memory_ids") or []]
    return [
        html('<span class="id">$id</span> $badge', id=ref["id"], badge=badge("missing", tone="bad"))
        if ref.get("missing")
        else memory_link(str(ref["id"]), ref.get("title"), status=ref.get("status"), with_id=with_ids)
        for ref in cited
        if isinstance(ref, dict) and "id" in ref
    ]


def is_outdated(event: dict[str, Any], current_version: int | None) -> bool:
    """Whether a warning was made on a patch version older than ``current_version``."""
    version = (event.get("payload") or {}).get("patch_version")
    return (
        isinstance(version, int)
        and not isinstance(version, bool)
        and isinstance(current_version, int)
        and version < current_version
    )


def warning_card(event: dict[str, Any], *, current_version: int | None = None) -> Markup:
    """An oracle warning: severity, confidence, message (Markdown), quoted patch lines, and each cited
    memory entry as a link titled with the entry's title. One made on a patch version older than
    ``current_version`` is marked outdated."""
    payload = event.get("payload") or {}
    severity = str(payload.get("severity") or "warning")
    outdated = is_outdated(event, current_version)
    return html(
        '<article class="warning warning-$severity$outdated_class" aria-labelledby="warning-$id">'
        '<h3 id="warning-$id">$badge Oracle warning on patch v$version$outdated</h3>'
        "$confidence"
        '<div class="message md">$message</div>'
        "$evidence"
        '<h4>Cited memory</h4><ul class="citations">$citations</ul>'
        '<p class="meta">Event $id · $actor · $at</p>'
        "</article>",
        severity=severity,
        outdated_class=" warning-outdated" if outdated else "",
        id=event.get("id"),
        badge=badge(severity),
        version=payload.get("patch_version", "?"),
        outdated=html(
            ' $badge <span class="outdated-note">the patch is now v$now</span>',
            badge=badge("outdated", tone="muted"),
            now=current_version,
        )
        if outdated
        else Markup(""),
        message=render_markdown(payload.get("message_md", ""), heading=5),
        confidence=_confidence(payload),
        evidence=_evidence(payload),
        citations=join(html("<li>$link</li>", link=link) for link in citation_links(event)),
        actor=event.get("actor", ""),
        at=when(event.get("created_at", "")),
    )


def table(caption: str, headers: list[str], rows: list[Markup], *, empty: str) -> Markup:
    """A captioned table of ``rows`` under ``headers`` (``empty`` when there are none)."""
    if not rows:
        return html('<p class="empty">$empty</p>', empty=empty)
    head = join(html('<th scope="col">$h</th>', h=h) for h in headers)
    return html(
        '<div class="table-wrap"><table><caption>$caption</caption><thead><tr>$head</tr></thead>'
        "<tbody>$rows</tbody></table></div>",
        caption=caption,
        head=head,
        rows=join(rows),
    )


def next_page(href: str | None) -> Markup:
    """The link to a list's next page (nothing on the last page)."""
    return html('<p><a rel="next" href="$href">Next page</a></p>', href=href) if href else Markup("")
