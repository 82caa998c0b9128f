"""What a ``--wait`` launch command prints: its progress lines, and its answer with readable text.

Shared by the in-process commands (:mod:`supervisor.cli.commands._oracle`, ``_review``) and the quick
hand-off path (:mod:`supervisor.cli._quick`), so a launch handed to ``roundtable serve`` prints
exactly what one run in-process prints. Light on purpose: the standard library and the timeline's
text helpers only.
"""

from __future__ import annotations

import json
import os
import sys
import time

from supervisor.cli._timeline_text import warning_lines

TYPE_CHECKING = False  # typing's flag without importing typing: see supervisor.cli._quick
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = [
    "end_when_answered",
    "exits_when_answered",
    "oracle_launch_answer",
    "print_and_exit",
    "process_started",
    "progress_printer",
    "review_run_answer",
    "review_run_lines",
]


def exits_when_answered(args: Any) -> bool:
    """Whether the command may end its process as soon as its answer is printed (the console script
    says so, :func:`supervisor.cli._main.main`; a caller of ``main`` in-process never)."""
    return bool(getattr(args, "exit_when_answered", False))


async def end_when_answered(args: Any, supervisor: Any, pool: Any, answer: dict[str, Any]) -> None:
    """If the command may end its process once answered (:func:`exits_when_answered`): stop the
    one-shot ``pool`` (its containers removed), close ``supervisor`` (its owner lock released) and
    :func:`print_and_exit`; otherwise return, and the command answers as usual."""
    if not exits_when_answered(args):
        return
    if pool is not None:
        await pool.stop()
    await supervisor.aclose()
    print_and_exit(args, answer)


def print_and_exit(args: Any, answer: dict[str, Any]) -> None:
    """Print ``answer`` as the command would and end the process with status 0 at once.

    For a launch command whose work is done (grants revoked, containers stopped and removed, ends
    recorded, the owner lock released): what is left, the launch sockets' servers winding down, is
    the process's own and goes with it."""
    from supervisor.cli._output import emit

    emit(answer, as_json=args.json)
    sys.stderr.flush()
    os._exit(0)


def process_started() -> float:
    """``time.monotonic()`` when this process started (Linux: its start time in ``/proc/self/stat``,
    clock ticks since boot, against ``CLOCK_BOOTTIME``, to a tick); elsewhere, now.

    A progress line's time is what a user waiting on the command has waited: interpreter start-up
    and imports included, not only what came after the printer was made."""
    try:
        with open("/proc/self/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()  # the name, in parentheses, may hold spaces
        since_boot = int(fields[19]) / os.sysconf("SC_CLK_TCK")  # field 22 of the whole line
        elapsed = time.clock_gettime(time.CLOCK_BOOTTIME) - since_boot
    except (OSError, IndexError, ValueError, AttributeError):
        return time.monotonic()
    now = time.monotonic()
    return now - elapsed if 0 <= elapsed < now else now


def progress_printer(as_json: bool) -> Callable[[str, dict[str, Any]], None]:
    """A phase reporter writing one line per phase to stderr (JSON lines with ``--json``), each
    with the time since the process started."""
    started = process_started()

    def report(phase: str, details: dict[str, Any]) -> None:
        if as_json:
            line = json.dumps({"phase": phase, **details}, sort_keys=True)
        else:
            shown = {k: v for k, v in details.items() if k != "launch_id"}
            extra = " ".join(f"{k}={v}" for k, v in shown.items())
            line = f"[{time.monotonic() - started:6.2f}s] {phase:<14} {details.get('launch_id', '')} {extra}"
        sys.stderr.write(line.rstrip() + "\n")
        sys.stderr.flush()

    return report


def oracle_launch_answer(body: dict[str, Any]) -> dict[str, Any]:
    """``oracle launch --wait``'s answer for a launch's result ``body`` (warnings with their cited
    memories): ``{"launch": body, "message": the readable outcome}``."""
    warnings = body["warnings"]
    lines = [
        f"launch {body['id']}: {body['status']} (exit code {body['exit_code']}), {len(warnings)} warning(s)"
    ]
    if body["status"] == "failed":
        lines.append(f"  failed: {body['reason']}" + (f": {body['error']}" if body.get("error") else ""))
    for event in warnings:
        block = warning_lines(event["payload"], event["cited_memories"])
        lines += ["", f"  - {block[0]}", *(f"    {line}".rstrip() for line in block[1:])]
    return {"launch": body, "message": "\n".join(lines)}


def review_run_answer(body: dict[str, Any]) -> dict[str, Any]:
    """``review run --wait``'s answer for a round's outcome ``body``."""
    return {"review": body, "message": "\n".join(review_run_lines(body))}


def review_run_lines(body: dict[str, Any]) -> list[str]:
    """The readable outcome of a review run: launches, votes, warnings, consensus."""
    review = body["round"]
    lines = [
        f"review round {review.get('number')} of {body['proposal_id']} (patch v{review.get('patch_version')})"
    ]
    lines.append("launches:")
    for launch in body["launches"]:
        if launch["launch"] is not None:
            run = launch["launch"]
            end = f"{run['status']}, exit {run['exit_code']}" + (
                f", {run['reason']}" if run.get("reason") else ""
            )
        else:
            end = f"not started: [{launch['error']['code']}] {launch['error']['message']}"
        lines.append(f"  {launch['agent_id']:<18} {launch['kind']:<8} {end} ({launch['seconds']:.1f}s)")
    lines.append("votes:")
    for vote in body["votes"]:
        reason = vote["reason_md"].strip().splitlines()[0] if vote["reason_md"].strip() else ""
        lines.append(f"  {vote['agent_id']:<18} {vote['vote']:<18} {reason[:100]}")
    if not body["votes"]:
        lines.append("  (none)")
    lines.append(f"warnings: {len(body['warnings'])}")
    for event in body["warnings"]:
        block = warning_lines(event["payload"], [])
        lines += [f"  - {block[0]}", *(f"    {line}".rstrip() for line in block[1:])]
    consensus = body["consensus"]
    state = "reached" if consensus.get("reached") else "not reached"
    lines.append(f"consensus: {state} ({consensus.get('approvals')}/{consensus.get('required')} approvals)")
    return lines
