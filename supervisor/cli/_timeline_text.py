"""A proposal's timeline as a readable table for a terminal.

Text in events is untrusted (reasons, oracle warnings, titles), so control characters, terminal
escape sequences included, are shown escaped rather than sent to the terminal.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

__all__ = ["render_timeline"]

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_DETAIL_WIDTH = 110


def _clean(value: object, width: int | None = None) -> str:
    text = _CONTROL.sub(lambda m: repr(m.group())[1:-1] if m.group() != "\n" else " ", str(value))
    if width is not None and len(text) > width:
        text = text[: width - 1] + "…"
    return text


def _short(sha: object) -> str:
    return f"{str(sha)[:12]}…" if sha else "?"


def _patch(event: dict[str, Any]) -> str:
    patch = event.get("patch") or event["payload"]
    files = ", ".join(patch.get("files", []))
    reset = " — reviews reset" if event["payload"].get("reviews_reset") else ""
    size = patch.get("size_bytes")
    return f"v{patch.get('version')} sha256 {_short(patch.get('sha256'))} {size} B: {files}{reset}"


def _created(event: dict[str, Any]) -> str:
    payload = event["payload"]
    return f"{payload.get('title')!r} by {payload.get('agent_id')} (risk {payload.get('risk')})"


def _round(event: dict[str, Any]) -> str:
    review = event["payload"].get("round", {})
    voters = ", ".join(c["agent_id"] for c in review.get("candidates", [])) or "none"
    advisory = ", ".join(
        f"{a['agent_id']} ({'launched' if a.get('launched') else 'not launched'})"
        for a in review.get("advisory", [])
    )
    roles = "+".join(review.get("voting_roles", []))
    where = f"round {review.get('number')} on v{review.get('patch_version')} [{roles}]"
    return f"{where}: voters {voters}; advisory {advisory}"


def _vote(event: dict[str, Any]) -> str:
    vote = event.get("vote") or event["payload"]
    counts = "counts" if vote.get("counts") else "does not count"
    reason = f": {vote['reason_md']}" if vote.get("reason_md") else ""
    who = f"{vote.get('agent_id')} ({vote.get('role')})"
    return f"{who} {vote.get('vote')} on v{vote.get('patch_version')} [{counts}]{reason}"


def _status(event: dict[str, Any]) -> str:
    payload = event["payload"]
    consensus = payload.get("consensus", {})
    return (
        f"{payload.get('from')} -> {payload.get('to')} "
        f"(approvals {consensus.get('approvals')}/{consensus.get('required')})"
    )


def _decision(event: dict[str, Any]) -> str:
    decision = event.get("decision") or event["payload"].get("decision", {})
    replaced = f" (supersedes {decision['supersedes']})" if decision.get("supersedes") else ""
    later = f" (superseded by {decision['superseded_by']})" if decision.get("superseded_by") else ""
    return f"{decision.get('id')} {decision.get('outcome')}{replaced}{later}: {decision.get('rationale_md')}"


def _closed(event: dict[str, Any]) -> str:
    return f"{event['payload'].get('decision_id')}: {event['payload'].get('reason_md')}"


def _warning(event: dict[str, Any]) -> str:
    payload = event["payload"]
    cited = "; ".join(
        f"{m['id']} (missing)" if m.get("missing") else f"{m['id']} {m.get('title')!r} [{m.get('status')}]"
        for m in event.get("cited_memories", [])
    )
    # The citation comes first: it is what a maintainer follows, and the message may be long.
    message = str(payload.get("message_md", "")).replace("*", "").strip()
    return f"[{payload.get('severity', 'warning')}] cites {cited or 'nothing'} — {message}"


def _launch(event: dict[str, Any]) -> str:
    payload = event["payload"]
    launch = str(payload.get("launch_id", "?"))
    kind = event["type"]
    if kind == "role.launch_requested":
        provider = payload.get("provider") or "default"
        return f"{launch} {payload.get('agent_id')} ({provider}) on {payload.get('image')}"
    if kind == "role.container_created":
        return f"{launch} container {str(payload.get('container_id', ''))[:12]}"
    if kind == "role.model_usage":
        return f"{launch} {payload.get('requests')} model requests, {payload.get('total_tokens')} tokens"
    status = payload.get("status", "exited" if kind == "role.exited" else "")
    detail = f"{payload['reason']}: {payload['error']}" if payload.get("error") else payload.get("reason")
    reason = f" ({detail})" if payload.get("reason") else ""
    code = f" exit {payload['exit_code']}" if payload.get("exit_code") is not None else ""
    return f"{launch} {status}{code}{reason}".strip()


def _grant(event: dict[str, Any]) -> str:
    payload = event["payload"]
    if event["type"] == "capability.granted":
        return f"{payload.get('grant_id')} to {payload.get('agent_id')} until {payload.get('expires_at')}"
    return f"{payload.get('grant_id')} ({payload.get('reason', 'revoked')})"


def _memory(event: dict[str, Any]) -> str:
    payload = event["payload"]
    return (
        f"{payload.get('kind')} {payload.get('memory_id')} {payload.get('title')!r} in {payload.get('scope')}"
    )


def _apply(event: dict[str, Any]) -> str:
    payload = event["payload"]
    parts = [str(payload.get("transaction_id"))]
    if "after_hash" in payload:
        parts.append(f"before {_short(payload.get('before_hash'))} after {_short(payload['after_hash'])}")
    if "error" in payload:
        parts.append(f"error: {payload['error']} (restored: {payload.get('restored')})")
    return " ".join(parts)


_DETAILS: dict[str, Callable[[dict[str, Any]], str]] = {
    "proposal.created": _created,
    "proposal.patch_attached": _patch,
    "proposal.reviews_invalidated": lambda e: str(e["payload"].get("message")),
    "proposal.review_requested": _round,
    "vote.cast": _vote,
    "proposal.accepted": _status,
    "proposal.consensus_lost": _status,
    "proposal.status_changed": _status,
    "decision.recorded": _decision,
    "proposal.rejected": _closed,
    "proposal.withdrawn": _closed,
    "memory.oracle_warning": _warning,
    "memory.recorded": _memory,
    "capability.granted": _grant,
    "capability.revoked": _grant,
    "role.launch_requested": _launch,
    "role.container_created": _launch,
    "role.started": _launch,
    "role.exited": _launch,
    "role.failed": _launch,
    "role.model_usage": _launch,
    "proposal.apply_started": _apply,
    "proposal.applied": _apply,
    "proposal.apply_failed": _apply,
}


def _detail(event: dict[str, Any]) -> str:
    render = _DETAILS.get(event["type"])
    try:
        if render is not None:
            return render(event)
    except (KeyError, TypeError, AttributeError):
        pass  # an event written by an older or newer version: fall back to its payload
    return json.dumps(event["payload"], sort_keys=True, ensure_ascii=False)


def render_timeline(body: dict[str, Any]) -> str:
    """``{"proposal", "events"}`` as a heading and one table row per event, oldest first."""
    proposal = body["proposal"]
    consensus = proposal.get("consensus", {})
    patch = proposal.get("patch") or {}
    reached = "reached" if consensus.get("reached") else "not reached"
    lines = [
        _clean(
            f"{proposal['id']}  {proposal['title']!r} by {proposal['agent_id']}  (task {proposal['task_id']})"
        ),
        _clean(
            f"status {proposal['status']}; patch v{proposal['current_version']}"
            f" sha256 {_short(patch.get('sha256'))};"
            f" consensus {consensus.get('approvals')}/{consensus.get('required')} approvals, {reached}"
        ),
        "",
    ]
    rows = [("#", "time (UTC)", "event", "actor", "detail")]
    for event in body["events"]:
        when = str(event["created_at"]).replace("T", " ")[:19]
        rows.append((str(event["id"]), when, event["type"], event["actor"], _detail(event)))
    widths = [max(len(_clean(row[i])) for row in rows) for i in range(4)]
    for row in rows:
        cells = [_clean(cell).ljust(widths[i]) for i, cell in enumerate(row[:4])]
        lines.append("  ".join([*cells, _clean(row[4], _DETAIL_WIDTH)]).rstrip())
    return "\n".join(lines)
