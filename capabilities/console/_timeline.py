"""A proposal's timeline as the console shows it: decisions one row each, launch plumbing folded.

- A launch's plumbing (``role.*`` events and the ``capability.granted``/``capability.revoked`` of
  its grant) is one row, where the launch began: a ``<details>`` element (no script) whose summary
  says who ran on which image, how long it took from request to end and how it ended, and which
  opens on each step.
- A status change reads ``from → to``, as ``roundtable proposal timeline`` prints it.
- An oracle warning reads as one line of Markdown with each cited memory entry as a link.
- A launched reviewer's vote names the launch that cast it beside the vote.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from capabilities.console._html import Markup, esc, html, join, when
from capabilities.console._markdown import render_markdown_inline
from capabilities.console._widgets import badge, citation_links, vote_badge

__all__ = ["timeline_item", "timeline_items"]

_GRANT_EVENTS = frozenset({"capability.granted", "capability.revoked"})
_ENDS = frozenset({"role.exited", "role.failed"})


def _launch_of(event: dict[str, Any]) -> str | None:
    """The launch an event is plumbing of, if it is."""
    kind = str(event.get("type", ""))
    launch = (event.get("payload") or {}).get("launch_id")
    if isinstance(launch, str) and launch and (kind.startswith("role.") or kind in _GRANT_EVENTS):
        return launch
    return None


def _duration(start: Any, end: Any) -> str | None:
    try:
        seconds = (datetime.fromisoformat(str(end)) - datetime.fromisoformat(str(start))).total_seconds()
    except ValueError:
        return None
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest} s"


def _launch_summary(launch_id: str, steps: list[dict[str, Any]]) -> Markup:
    """``reviewer-2 (reviewer) ran my-agent:7 via mcp · 4.2 s from request to end · failed 1``."""
    first = steps[0]
    facts: dict[str, Any] = {}
    for step in steps:
        facts = {**(step.get("payload") or {}), **facts}  # the earliest event says it first
    requested = next((s for s in steps if s.get("type") == "role.launch_requested"), None)
    if requested is not None:
        facts.update(requested.get("payload") or {})
    end = next((s for s in reversed(steps) if s.get("type") in _ENDS), None)
    if end is None:
        started = any(s.get("type") == "role.started" for s in steps)
        outcome = badge("running" if started else "not started", tone="info")
        took = html(" · no end recorded yet")
    else:
        ended = end.get("payload") or {}
        status = str(ended.get("status") or ("exited" if end.get("type") == "role.exited" else "failed"))
        code = "" if ended.get("exit_code") is None else f" {ended['exit_code']}"
        outcome = html(
            "$badge$reason",
            badge=badge(f"{status}{code}", tone="good" if status == "exited" else "bad"),
            reason=f" ({ended['reason']})" if ended.get("reason") else "",
        )
        duration = _duration(first.get("created_at"), end.get("created_at"))
        took = html(" · $d from request to end", d=duration) if duration else Markup("")
    usage = next((s.get("payload") or {} for s in steps if s.get("type") == "role.model_usage"), None)
    return html(
        '<span class="type">launch</span> <span class="actor">$agent ($role)</span>'
        ' <span class="summary">ran <code>$image</code>$provider$took · $outcome$usage'
        ' <span class="steps">· $n steps</span></span> <span class="id">$launch</span>',
        agent=facts.get("agent_id", "?"),
        role=facts.get("role", "?"),
        image=facts.get("image", "?"),
        provider=f" via {facts['provider']}" if facts.get("provider") else "",
        took=took,
        outcome=outcome,
        usage=html(
            " · $r model requests, $t tokens", r=usage.get("requests", "?"), t=usage.get("total_tokens", "?")
        )
        if usage
        else Markup(""),
        n=len(steps),
        launch=launch_id,
    )


def _launch_step(event: dict[str, Any]) -> Markup:
    payload = event.get("payload") or {}
    kind = event.get("type", "")
    if kind == "role.launch_requested":
        return html("$agent on $image", agent=payload.get("agent_id"), image=payload.get("image"))
    if kind == "role.container_created":
        return html('container <span class="id">$c</span>', c=str(payload.get("container_id", ""))[:12])
    if kind == "role.model_usage":
        return html("$r model requests, $t tokens", r=payload.get("requests"), t=payload.get("total_tokens"))
    if kind == "role.started":
        return html("container started")
    if kind == "capability.granted":
        return html(
            'grant <span class="id">$g</span> for <span class="token">$agent</span> ($role) until $t',
            g=payload.get("grant_id"),
            role=payload.get("role"),
            agent=payload.get("agent_id"),
            t=when(payload.get("expires_at")),
        )
    if kind == "capability.revoked":
        return html(
            'grant <span class="id">$g</span> ($r)', g=payload.get("grant_id"), r=payload.get("reason")
        )
    if kind in _ENDS:
        code = "" if payload.get("exit_code") is None else f" {payload['exit_code']}"
        detail = f": {payload['error']}" if payload.get("error") else ""
        reason = f" ({payload['reason']}{detail})" if payload.get("reason") else ""
        return esc(f"{payload.get('status', '')}{code}{reason}")
    return Markup("")


def _launch_group(launch_id: str, steps: list[dict[str, Any]]) -> Markup:
    return html(
        '<li class="event event-launch"><details class="launch-group">'
        "<summary>$at $summary</summary>"
        '<ol class="launch-steps">$steps</ol></details></li>',
        at=when(steps[0].get("created_at", "")),
        summary=_launch_summary(launch_id, steps),
        steps=join(timeline_item(step, summary=_launch_step) for step in steps),
    )


def _vote(event: dict[str, Any]) -> Markup:
    vote = event["vote"]
    summary = html(
        "$agent voted $vote on v$version $counts",
        agent=vote.get("agent_id"),
        vote=vote_badge(vote.get("vote")),
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


def _warning(event: dict[str, Any]) -> Markup:
    payload = event.get("payload") or {}
    links = citation_links(event, with_ids=False)
    return html(
        "$severity oracle warning on v$version: $message$cites",
        severity=badge(str(payload.get("severity") or "warning")),
        version=payload.get("patch_version", "?"),
        message=render_markdown_inline(payload.get("message_md", "")),
        cites=html(' <span class="cites">· cites $links</span>', links=join(links, ", "))
        if links
        else Markup(""),
    )


def _status_change(payload: dict[str, Any]) -> Markup:
    consensus = payload.get("consensus")
    approvals = (
        html(
            " (approvals $a/$r)",
            a=consensus.get("approvals"),
            r=consensus.get("required"),
        )
        if isinstance(consensus, dict)
        else Markup("")
    )
    return html(
        '<span class="change">$old → $new</span>$approvals',
        old=badge(payload["from"]),
        new=badge(payload["to"]),
        approvals=approvals,
    )


def _event_summary(event: dict[str, Any]) -> Markup:
    payload = event.get("payload") or {}
    kind = event.get("type", "")
    if kind == "vote.cast" and event.get("vote"):
        return _vote(event)
    if kind in ("proposal.created", "proposal.patch_attached") and event.get("patch"):
        patch = event["patch"]
        return html(
            "patch v$version · $size bytes · $files",
            version=patch.get("version"),
            size=patch.get("size_bytes"),
            files=", ".join(str(f) for f in patch.get("files") or []),
        )
    if kind == "memory.oracle_warning":
        return _warning(event)
    if kind in _GRANT_EVENTS:
        return _launch_step(event)
    if kind == "decision.recorded" and event.get("decision"):
        decision = event["decision"]
        return html("decision: $outcome", outcome=badge(decision.get("outcome", "")))
    if isinstance(payload.get("from"), str) and isinstance(payload.get("to"), str):
        return _status_change(payload)
    if isinstance(payload.get("reason_md"), str):
        return render_markdown_inline(payload["reason_md"])
    for key in ("message", "title", "status"):
        if isinstance(payload.get(key), str):
            return esc(payload[key])
    return Markup("")


def timeline_item(
    event: dict[str, Any], *, summary: Callable[[dict[str, Any]], Markup] = _event_summary
) -> Markup:
    """One timeline entry: time, type, actor and a one-line summary."""
    return html(
        '<li class="event event-$group">$at'
        ' <span class="type">$type</span> <span class="actor">by $actor</span>'
        ' <span class="summary">$summary</span></li>',
        group=str(event.get("type", "")).split(".")[0],
        at=when(event.get("created_at", "")),
        type=event.get("type", ""),
        actor=event.get("actor", ""),
        summary=summary(event),
    )


def timeline_items(events: list[dict[str, Any]]) -> Markup:
    """The timeline, oldest first, each launch's plumbing folded into one row where it began."""
    launches: dict[str, list[dict[str, Any]]] = {}
    rows: list[str | dict[str, Any]] = []
    for event in events:
        launch = _launch_of(event)
        if launch is None:
            rows.append(event)
            continue
        if launch not in launches:
            launches[launch] = []
            rows.append(launch)
        launches[launch].append(event)
    return join(
        _launch_group(row, launches[row]) if isinstance(row, str) else timeline_item(row) for row in rows
    )
