"""``roundtable oracle feedback EVENT_ID --verdict V [--reason R]`` and ``roundtable oracle stats``.

Both call the operator tools ``oracle.feedback`` and ``oracle.stats`` on behalf of the local
operator, with the same arguments and answers as an MCP client. ``feedback`` writes one
``memory.oracle_feedback`` event (the warning is never changed; the operator's latest verdict on a
warning is the one that counts). ``stats`` prints a table per provider (``--json``: the tool's
answer, with the rendered table under ``message``).
"""

from __future__ import annotations

import argparse
from typing import Any

from supervisor.cli._choices import add_lazy_choice
from supervisor.cli._project import run_operator_tool

__all__ = ["register_subcommands", "stats_table"]

_COLUMNS = ("provider", "warnings", "confirmed", "dismissed", "unreviewed", "precision")


def stats_table(providers: list[dict[str, Any]]) -> str:
    """The human table of ``oracle.stats``: one row per provider; precision ``-`` with no verdicts."""
    if not providers:
        return "(no oracle warnings yet)"
    rows = [list(_COLUMNS)]
    for item in providers:
        precision = item["precision"]
        cells = [str(item[name]) for name in _COLUMNS[:-1]]
        rows.append([*cells, "-" if precision is None else f"{precision:.2f}"])
    widths = [max(len(row[i]) for row in rows) for i in range(len(_COLUMNS))]
    lines = [
        "  ".join(
            cell.ljust(width) if i == 0 else cell.rjust(width)
            for i, (cell, width) in enumerate(zip(row, widths, strict=True))
        )
        for row in rows
    ]
    return "\n".join(line.rstrip() for line in lines)


async def _feedback(args: argparse.Namespace) -> dict[str, Any]:
    arguments: dict[str, Any] = {"warning_event_id": args.event_id, "verdict": args.verdict}
    if args.reason is not None:
        arguments["reason"] = args.reason
    answer = await run_operator_tool(args.root, "oracle.feedback", arguments)
    event = answer["event"]
    payload = event["payload"]
    return {
        **answer,
        "message": f"event {event['id']}: warning {payload['warning_event_id']} {payload['verdict']}"
        f" by {event['actor']} (provider {payload['provider']})",
    }


async def _stats(args: argparse.Namespace) -> dict[str, Any]:
    answer = await run_operator_tool(args.root, "oracle.stats", {})
    return {**answer, "message": stats_table(answer["providers"])}


def _verdicts() -> list[str]:
    from store import Verdict

    return list(Verdict)


def register_subcommands(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add ``feedback`` and ``stats`` to the ``oracle`` group's subcommands ``sub``."""
    feedback = sub.add_parser(
        "feedback", parents=[common], help="confirm or dismiss an oracle warning (a new event)"
    )
    feedback.add_argument("event_id", metavar="EVENT_ID", type=int, help="the memory.oracle_warning event")
    add_lazy_choice(feedback, "--verdict", load=_verdicts, required=True)
    feedback.add_argument("--reason", help="why, in a few words (optional)")
    feedback.set_defaults(handler=_feedback)
    stats = sub.add_parser(
        "stats", parents=[common], help="precision of each oracle provider, from maintainers' feedback"
    )
    stats.set_defaults(handler=_stats)
