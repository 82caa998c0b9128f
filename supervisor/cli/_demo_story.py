"""The readable output of ``roundtable demo``: the story in a few numbered lines, short IDs.

``--json`` keeps the whole answer (every ID in full, the timeline); on a terminal the demo tells
what happened: the two decisions, the proposal, the review round, the oracle's launch folded into
one line, its warning whole, and which decision it left alone (recorded, but not cited).
"""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path
from typing import Any

from supervisor.cli._output import clean, short_id
from supervisor.cli._timeline_text import warning_lines

__all__ = ["render_demo", "shorten_ids"]

_ID = re.compile(r"\b[A-Z]-\d{8}T\d{12}Z-[0-9a-f]{12}\b")


def shorten_ids(text: str) -> str:
    """``text`` with every full Roundtable ID in it shortened (``M-…b9f627952977``)."""
    return _ID.sub(lambda m: short_id(m.group()), text)


def _seconds(events: list[dict[str, Any]], launch_id: str) -> float | None:
    stamps = [
        datetime.fromisoformat(str(e["created_at"]).replace("Z", "+00:00"))
        for e in events
        if isinstance(e.get("payload"), dict) and e["payload"].get("launch_id") == launch_id
    ]
    return (max(stamps) - min(stamps)).total_seconds() if len(stamps) > 1 else None


def _cited(events: list[dict[str, Any]]) -> set[str]:
    return {
        str(memory_id)
        for e in events
        if e["type"] == "memory.oracle_warning"
        for memory_id in e["payload"].get("cited_memory_ids") or []
    }


def render_demo(body: dict[str, Any]) -> str:
    """The demo's story, from its ``--json`` answer."""
    events = body["timeline"]["events"]
    proposal = body["timeline"]["proposal"]
    launch = body["launch"]
    decision, unrelated = body["decision"], body.get("unrelated_decision")
    warnings = [e for e in events if e["type"] == "memory.oracle_warning"]
    took = _seconds(events, launch["id"])
    review = proposal.get("review_round") or {}
    voters = " and ".join(c["agent_id"] for c in review.get("candidates", [])) or "nobody"
    decisions = [d for d in (decision, unrelated) if d]
    lines = ["1. Project memory holds two decisions:"]
    lines += [f"     {short_id(d['id'])}  {clean(d['title'])}" for d in decisions]
    lines += [
        f"2. {proposal['agent_id']} proposes {short_id(proposal['id'])} {clean(repr(proposal['title']))}:"
        " raw SQL in app/users.py.",
        f"3. Review requested: {voters} may vote; the MemoryOracle only advises, and nothing was launched.",
        f"4. The operator launches the MemoryOracle: {short_id(launch['id'])} ({launch.get('provider')}"
        f" provider, hardened container) {launch['status']} with exit code {launch.get('exit_code')}"
        + (f" after {took:.1f} s" if took is not None else "")
        + f", {len(warnings)} warning(s):",
    ]
    for event in warnings:
        cited = [{**ref, "id": short_id(ref.get("id"))} for ref in event.get("cited_memories") or []]
        payload = {**event["payload"], "message_md": shorten_ids(str(event["payload"].get("message_md", "")))}
        lines += [f"     {shorten_ids(line)}".rstrip() for line in warning_lines(payload, cited)]
    cited_ids = _cited(events)
    if unrelated:
        title = clean(repr(unrelated["title"]))
        if unrelated["id"] in cited_ids:
            lines.append(
                f"5. It also cited {short_id(unrelated['id'])} {title}, which the patch does not touch."
            )
        else:
            lines.append(
                f"5. It left {short_id(unrelated['id'])} {title} alone: recorded, but not cited,"
                " since nothing in the patch goes against it."
            )
    lines.append("The warning is advice: reviewers decide.")
    if Path(body["root"]).is_dir():
        lines.append(f"Every event: roundtable --root {body['root']} timeline {proposal['id']}")
    else:
        lines.append(
            "`roundtable demo --keep` keeps the scratch project, for `roundtable timeline` and the console."
        )
    return "\n".join(lines)
