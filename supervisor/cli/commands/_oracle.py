"""``roundtable oracle launch P [--wait] [--timeout S] [--provider NAME]``.

The explicit launch of the MemoryOracle for one proposal. Progress goes to stderr as it happens
(readable lines on a terminal, JSON lines with ``--json``). With ``--wait`` the command returns
when the container has exited and prints ``{"launch": {"id", "status", "exit_code", "reason",
"error", "warnings"}}`` (a ``failed`` launch's reason and error also on a line of their own); each
warning event also carries ``cited_memories`` (ID, title, status, looked up in the store), and the
readable output shows each warning whole (:func:`~supervisor.cli._timeline_text.warning_lines`).
Without it, the launch continues in a detached supervisor process and the command prints the
launch's ID as soon as the launch is recorded (an unknown or closed proposal is refused first,
with its real error: :mod:`supervisor.cli._background`).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from supervisor.cli._background import (
    check_reviewable,
    foreground_reporter,
    resolve_proposal,
    start_detached,
)
from supervisor.cli._choices import add_lazy_choice
from supervisor.cli._launch_text import end_when_answered, oracle_launch_answer
from supervisor.cli.commands import _oracle_feedback, add_command

if TYPE_CHECKING:
    from store import Store

__all__ = ["cited_warnings", "register"]


async def _launch(args: argparse.Namespace) -> dict[str, Any]:
    args.proposal_id = await resolve_proposal(args)  # a unique prefix is enough
    if not args.wait:
        return _launch_detached(args)
    from supervisor.cli._handoff import hand_off, state_dir_of
    from supervisor.cli._project import open_project
    from supervisor.cli._quick import discard_prestart, take_prestart

    on_phase = foreground_reporter(args, "requested")

    # A `roundtable serve` on this project runs the launch, with its warm pool, when there is one
    # (and answers the same body, cited memories included: cited_warnings).
    handed = {"proposal_id": args.proposal_id, "provider": args.provider, "timeout": args.timeout}
    body = hand_off(state_dir_of(args.root), "oracle.launch", handed, on_phase, on_found=discard_prestart)
    if body is None:
        from supervisor import Supervisor

        with open_project(args.root) as store:
            # One pooled container, started before the launch machinery is imported: a cold launch's
            # container starts while this process loads what serves its socket.
            pooled = 1 if args.provider in (None, store.config.roles.memory_oracle.provider) else 0
            prestart = take_prestart() if pooled else None  # started by the quick path, if any
            async with (
                Supervisor(store, prestart=prestart) as supervisor,
                supervisor.warm(pooled, one_shot=True) as pool,
            ):
                result = await supervisor.launch_role(
                    "memory_oracle",
                    args.proposal_id,
                    provider=args.provider,
                    timeout=args.timeout,
                    on_phase=on_phase,
                )
                body = result.to_dict()
                body["warnings"] = cited_warnings(store, body["warnings"])
                await end_when_answered(args, supervisor, pool, oracle_launch_answer(body))
    return oracle_launch_answer(body)


def cited_warnings(store: Store, warnings: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The warning events of a launch, each with its ``cited_memories`` (looked up in ``store``)."""
    return [{**event, "cited_memories": _cited(store, event["payload"])} for event in warnings]


def _cited(store: Store, payload: dict[str, Any]) -> list[dict[str, Any]]:
    """Each cited memory entry's ID, title and status (``missing`` when the store has no such entry)."""
    ids = [i for i in payload.get("cited_memory_ids") or [] if isinstance(i, str)]
    found = store.db.read(lambda conn: store.memory.get_many(conn, ids))
    return [
        {"id": i, "title": found[i].title, "status": str(found[i].status)}
        if i in found
        else {"id": i, "missing": True}
        for i in ids
    ]


def _launch_detached(args: argparse.Namespace) -> dict[str, Any]:
    """Run ``oracle launch --wait`` in the background; return once the launch is recorded."""
    root = check_reviewable(args.root, args.proposal_id)
    argv = ["oracle", "launch", args.proposal_id, "--wait", "--json"]
    if args.timeout is not None:
        argv += ["--timeout", str(args.timeout)]
    if args.provider:
        argv += ["--provider", args.provider]
    child = start_detached(root, argv, "oracle-launch")
    launch_id = child.announced["launch_id"]
    return {
        "launch": {
            "id": launch_id,
            "status": "requested",
            "detached": True,
            "pid": child.pid,
            "log": str(child.log),
        },
        "message": f"launch {launch_id} runs in the background (pid {child.pid}, log {child.log}); "
        f"follow it with `roundtable timeline {args.proposal_id}`",
    }


def _providers() -> list[str]:
    from store.config import ProviderName

    return list(ProviderName)


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    """Add ``oracle launch``."""
    oracle = add_command(commands, "oracle", common)
    sub = oracle.add_subparsers(dest="oracle_command", metavar="ACTION", parser_class=type(oracle))
    sub.required = True
    launch = sub.add_parser(
        "launch", parents=[common], help="launch the MemoryOracle container for a proposal"
    )
    launch.add_argument("proposal_id", metavar="P")
    launch.add_argument(
        "--wait", action="store_true", help="wait for the container to exit and print the result"
    )
    launch.add_argument(
        "--timeout", type=float, help="the launch deadline in seconds (default from config.toml)"
    )
    add_lazy_choice(launch, "--provider", load=_providers, help="override the configured provider")
    launch.add_argument("--announce-fd", type=int, help=argparse.SUPPRESS)
    launch.set_defaults(handler=_launch)
    _oracle_feedback.register_subcommands(sub, common)
