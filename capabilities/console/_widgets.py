"""Pieces of console pages: tables, badges, rendered diffs, timeline items, warnings, memory links.

Every function returns :class:`~capabilities.console.html.Markup` built with
:func:`~capabilities.console.html.html`, so every value from the store is escaped.
"""

from __future__ import annotations

from typing import Any

from capabilities.console._html import Markup, attr_url, esc, html, join

__all__ = [
    "badge",
    "consensus_summary",
    "diff_block",
    "memory_link",
    "next_page",
    "table",
    "timeline_item",
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


def badge(text: Any, *, tone: str | None = None) -> Markup:
    """A status word in a coloured pill (the word itself carries the meaning, not the colour)."""
    chosen = tone or _STATUS_TONE.get(str(text), "neutral")
    return html('<span class="badge badge-$tone">$text</span>', tone=chosen, text=text)


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


def memory_link(memory_id: str, title: str | None = None, *, status: str | None = None) -> Markup:
    """A link to a memory entry's console page."""
    link = html(
        '<a class="memory-link" href="$href">$text</a>',
        href=attr_url(f"/memories/{memory_id}"),
        text=title or memory_id,
    )
    if title:
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


def warning_card(event: dict[str, Any]) -> Markup:
    """An oracle warning: severity, confidence, message, quoted patch lines, and each cited memory
    entry as a link titled with the entry's title."""
    payload = event.get("payload") or {}
    cited = event.get("cited_memories") or [{"id": m} for m in payload.get("cited_memory_ids") or []]
    citations = join(
        html(
            "<li>$link</li>",
            link=(
                html('<span class="id">$id</span> $badge', id=ref["id"], badge=badge("missing", tone="bad"))
                if ref.get("missing")
                else memory_link(str(ref["id"]), ref.get("title"), status=ref.get("status"))
            ),
        )
        for ref in cited
        if isinstance(ref, dict) and "id" in ref
    )
    severity = str(payload.get("severity") or "warning")
    return html(
        '<article class="warning warning-$severity" aria-labelledby="warning-$id">'
        '<h3 id="warning-$id">$badge Oracle warning on patch v$version</h3>'
        "$confidence"
        '<p class="message">$message</p>'
        "$evidence"
        '<h4>Cited memory</h4><ul class="citations">$citations</ul>'
        '<p class="meta">Event $id · $actor · <time datetime="$at">$at</time></p>'
        "</article>",
        severity=severity,
        id=event.get("id"),
        badge=badge(severity),
        version=payload.get("patch_version", "?"),
        message=payload.get("message_md", ""),
        confidence=_confidence(payload),
        evidence=_evidence(payload),
        citations=citations,
        actor=event.get("actor", ""),
        at=event.get("created_at", ""),
    )


def _event_summary(event: dict[str, Any]) -> Markup:
    payload = event.get("payload") or {}
    kind = event.get("type", "")
    if kind == "vote.cast" and event.get("vote"):
        vote = event["vote"]
        summary = html(
            "$agent voted $vote on v$version $counts",
            agent=vote.get("agent_id"),
            vote=badge(vote.get("vote"), tone="neutral"),
            version=vote.get("patch_version"),
            counts=badge("counts", tone="good")
            if vote.get("counts")
            else badge("no longer counts", tone="muted"),
        )
        launch = event.get("launch")
        if not launch:
            return summary
        took = launch.get("duration_seconds")
        return html(
            '$summary <span class="launch">launched $image ($provider)$duration, $status$exit</span>',
            summary=summary,
            image=launch.get("image"),
            provider=launch.get("provider"),
            duration=f", {took:.1f} s" if isinstance(took, int | float) else "",
            status=launch.get("status"),
            exit="" if launch.get("exit_code") is None else f" {launch['exit_code']}",
        )
    if kind in ("proposal.created", "proposal.patch_attached") and event.get("patch"):
        patch = event["patch"]
        return html(
            "patch v$version · $size bytes · $files",
            version=patch.get("version"),
            size=patch.get("size_bytes"),
            files=", ".join(str(f) for f in patch.get("files") or []),
        )
    if kind == "memory.oracle_warning":
        return html("oracle warning: $message", message=payload.get("message_md", ""))
    if kind == "decision.recorded" and event.get("decision"):
        decision = event["decision"]
        return html("decision: $outcome", outcome=decision.get("outcome", ""))
    for key in ("message", "reason_md", "title", "status"):
        if isinstance(payload.get(key), str):
            return esc(payload[key])
    return Markup("")


def timeline_item(event: dict[str, Any]) -> Markup:
    """One timeline entry: time, type, actor and a one-line summary."""
    return html(
        '<li class="event event-$group"><time datetime="$at">$at</time>'
        ' <span class="type">$type</span> <span class="actor">by $actor</span>'
        ' <span class="summary">$summary</span></li>',
        group=str(event.get("type", "")).split(".")[0],
        at=event.get("created_at", ""),
        type=event.get("type", ""),
        actor=event.get("actor", ""),
        summary=_event_summary(event),
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
