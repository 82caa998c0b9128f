"""A proposal's timeline as a readable table for a terminal.

Text in events is untrusted (reasons, oracle warnings, titles), so control characters, terminal
escape sequences included, are shown escaped rather than sent to the terminal.

An oracle warning gets one table row (severity, confidence, citations) and then, indented below
it, the whole warning as :func:`warning_lines` renders it (``oracle launch --wait`` prints the
same): the message wrapped but never cut, each quoted patch line as ``path:line  text``, and each
cited memory entry as ``M-...  title``.
"""

from __future__ import annotations

import json
import re

TYPE_CHECKING = False  # typing's flag without importing typing: see supervisor.cli._quick
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = ["launch_summary", "render_timeline", "warning_lines"]

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_DETAIL_WIDTH = 110
_WRAP_WIDTH = 100
_WARNING_INDENT = "      "


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
    line = f"{who} {vote.get('vote')} on v{vote.get('patch_version')} [{counts}]{reason}"
    if launch := event.get("launch"):
        line += f" — {launch_summary(launch)}"
    return line


def launch_summary(launch: dict[str, Any]) -> str:
    """``launched roundtable-role:0.1.0 (test), 4.2 s, exited 0``: what ran a vote."""
    took = launch.get("duration_seconds")
    duration = f", {took:.1f} s" if isinstance(took, int | float) else ""
    end = launch.get("status") or "?"
    if launch.get("exit_code") is not None:
        end += f" {launch['exit_code']}"
    return f"launched {launch.get('image')} ({launch.get('provider')}){duration}, {end}"


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


def _confidence(payload: dict[str, Any]) -> str:
    value = payload.get("confidence")
    if isinstance(value, int | float) and not isinstance(value, bool):
        return f"confidence {value:.2f}"
    return "confidence not given"


def _warning(event: dict[str, Any]) -> str:
    payload = event["payload"]
    cited = "; ".join(
        f"{m['id']} (missing)" if m.get("missing") else f"{m['id']} {m.get('title')!r} [{m.get('status')}]"
        for m in event.get("cited_memories", [])
    )
    # The row says what to follow; the whole warning is printed below it (warning_lines).
    return f"[{payload.get('severity', 'warning')}] {_confidence(payload)}, cites {cited or 'nothing'}"


def _wrapped(text: str) -> list[str]:
    import textwrap  # here, not at the top: a launch with no warning wraps nothing (supervisor.cli._quick)

    out: list[str] = []
    for raw in text.replace("**", "").strip().splitlines():
        line = _clean(raw.expandtabs(4)).rstrip()
        body = line.lstrip()
        hang = " " * (len(line) - len(body) + (2 if body[:2] in ("- ", "* ", "> ") else 0))
        wrapped = textwrap.wrap(line, _WRAP_WIDTH, subsequent_indent=hang, break_on_hyphens=False)
        out += wrapped or [""]
    return out


def warning_lines(payload: dict[str, Any], cited: list[dict[str, Any]]) -> list[str]:
    """A whole oracle warning, one terminal line each, every piece escaped.

    ``cited`` holds ``{"id", "title", "status"}`` for each cited entry (``{"id", "missing": true}``
    for one the store no longer has), as ``timeline`` gives it.
    """
    lines = [_clean(f"[{payload.get('severity', 'warning')}] {_confidence(payload)}")]
    lines += _wrapped(str(payload.get("message_md", "")))
    evidence = [e for e in payload.get("evidence") or [] if isinstance(e, dict)]
    if evidence:
        lines.append("quoted patch lines:")
        lines += [
            "  " + _clean(f"{e.get('path')}:{e.get('line')}  {str(e.get('text', '')).expandtabs(4)}")
            for e in evidence
        ]
    if cited:
        lines.append("cites:")
    for ref in cited:
        if ref.get("missing"):
            lines.append("  " + _clean(f"{ref.get('id')}  (missing)"))
        else:
            status = f"  [{ref.get('status')}]" if ref.get("status") not in (None, "active") else ""
            lines.append("  " + _clean(f"{ref.get('id')}  {ref.get('title')}{status}"))
    return lines


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
    for row, event in zip(rows, [None, *body["events"]], strict=True):
        cells = [_clean(cell).ljust(widths[i]) for i, cell in enumerate(row[:4])]
        lines.append("  ".join([*cells, _clean(row[4], _DETAIL_WIDTH)]).rstrip())
        if (
            event is not None
            and event["type"] == "memory.oracle_warning"
            and isinstance(event["payload"], dict)
        ):
            block = warning_lines(event["payload"], list(event.get("cited_memories") or []))
            lines += [f"{_WARNING_INDENT}{line}".rstrip() for line in block[1:]]  # [0] is in the row
    return "\n".join(lines)
