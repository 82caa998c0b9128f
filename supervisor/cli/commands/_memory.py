"""``roundtable memory record|query|summarize|mark-stale``: the memory tools from the command line.

Each subcommand calls the same tool, with the same arguments and answers, as an MCP client would,
on behalf of the local operator.
"""

from __future__ import annotations

import argparse
from typing import Any

from store import parse_json
from supervisor.cli._project import run_operator_tool
from supervisor.cli.commands import add_command

__all__ = ["register"]


def _drop_none(**values: Any) -> dict[str, Any]:
    return {key: value for key, value in values.items() if value is not None}


async def _record(args: argparse.Namespace) -> dict[str, Any]:
    body = args.body_md
    if args.body_file is not None:
        import anyio

        body = await anyio.Path(args.body_file).read_text(encoding="utf-8")
    return await run_operator_tool(
        args.root,
        "memory.record",
        _drop_none(
            scope=args.scope,
            kind=args.kind,
            title=args.title,
            body_md=body,
            source_event_id=args.source_event_id,
            importance=args.importance,
            memory_id=args.memory_id,
            status=args.status,
            checks=_checks(args.checks),
        ),
    )


def _checks(text: str | None) -> Any:
    """``--checks JSON`` as given; the store validates what it holds (``invalid_argument``)."""
    # parse_json, not json.loads: "[[[[...]]]]" deep enough raises RecursionError there.
    return None if text is None else parse_json("--checks", text)


async def _query(args: argparse.Namespace) -> dict[str, Any]:
    return await run_operator_tool(
        args.root,
        "memory.query",
        _drop_none(
            query=args.query,
            scope=args.scope,
            kind=args.kind,
            limit=args.limit,
            exclude_stale=True if args.exclude_stale else None,
            match=args.match,
        ),
    )


async def _summarize(args: argparse.Namespace) -> dict[str, Any]:
    return await run_operator_tool(
        args.root,
        "memory.summarize",
        _drop_none(scope=args.scope, task_id=args.task_id, proposal_id=args.proposal_id),
    )


async def _mark_stale(args: argparse.Namespace) -> dict[str, Any]:
    return await run_operator_tool(
        args.root,
        "memory.mark_stale",
        {"memory_id": args.memory_id, "reason_md": args.reason_md},
        ids={"memory_id": "memory"},
    )


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    """Add ``memory`` and its subcommands."""
    memory = add_command(commands, "memory", common)
    sub = memory.add_subparsers(dest="memory_command", metavar="ACTION", parser_class=type(memory))
    sub.required = True

    record = sub.add_parser("record", parents=[common], help="record (or fully replace) a memory entry")
    record.add_argument("--scope", required=True, help="'project', a task ID, or another scope")
    record.add_argument("--kind", required=True, help="decision, constraint, fact, summary, ...")
    record.add_argument("--title", required=True)
    body = record.add_mutually_exclusive_group(required=True)
    body.add_argument("--body-md", "--body", dest="body_md", help="the Markdown body")
    body.add_argument("--body-file", help="read the Markdown body from this file")
    record.add_argument("--source-event-id", type=int)
    record.add_argument("--importance", type=int)
    record.add_argument("--memory-id", help="replace this entry (full replacement)")
    record.add_argument("--status")
    record.add_argument(
        "--checks",
        metavar="JSON",
        help='executable checks of a decision or constraint, a JSON list: [{"kind": "forbid_added",'
        ' "pattern": "verify=False", "paths": ["*.py"], "message": "..."}] (docs/memory.md)',
    )
    record.set_defaults(handler=_record)

    query = sub.add_parser("query", parents=[common], help="search memory entries")
    query.add_argument("query", nargs="?", default=None, help="text to count (empty: all, by importance)")
    query.add_argument("--scope")
    query.add_argument("--kind")
    query.add_argument("--limit", type=int)
    query.add_argument("--exclude-stale", action="store_true")
    query.add_argument("--match", choices=["substring", "ranked"])
    query.set_defaults(handler=_query)

    summarize = sub.add_parser("summarize", parents=[common], help="a Markdown summary of non-stale entries")
    summarize.add_argument("--scope")
    summarize.add_argument("--task-id")
    summarize.add_argument("--proposal-id")
    summarize.set_defaults(handler=_summarize)

    stale = sub.add_parser("mark-stale", parents=[common], help="mark an entry stale, with a reason")
    stale.add_argument("memory_id")
    stale.add_argument("--reason-md", "--reason", dest="reason_md", required=True)
    stale.set_defaults(handler=_mark_stale)
