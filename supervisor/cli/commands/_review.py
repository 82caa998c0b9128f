"""``roundtable review run P [--wait]``: run a review round, its reviewers each in a container.

Opens a round if none is open, launches the MemoryOracle and every configured voting reviewer of
the round at once (bounded by ``max_concurrent_launches``) and, with ``--wait``, prints progress
lines on stderr as launches move and then the outcome: each launch, the votes, the warnings and
the consensus (:func:`supervisor.review.run_review`). Without ``--wait`` the round runs in a
detached supervisor process and the command answers once the round is open and its launches are
planned.
"""

from __future__ import annotations

import argparse
from typing import Any

from supervisor.cli._background import (
    check_reviewable,
    foreground_reporter,
    resolve_proposal,
    start_detached,
)
from supervisor.cli._launch_text import (
    end_when_answered,
    review_run_answer,
    review_run_lines,
)

__all__ = ["register_subcommands", "review_run_lines"]


async def _run(args: argparse.Namespace) -> dict[str, Any]:
    args.proposal_id = await resolve_proposal(args)  # a unique prefix is enough
    if not args.wait:
        return _run_detached(args)
    from supervisor.cli._handoff import hand_off, state_dir_of
    from supervisor.cli._project import open_project

    on_phase = foreground_reporter(args, "round")

    # A `roundtable serve` on this project runs the round, with its warm pool, when there is one.
    body = hand_off(state_dir_of(args.root), "review.run", {"proposal_id": args.proposal_id}, on_phase)
    if body is None:
        from supervisor import Supervisor
        from supervisor.review import run_review

        with open_project(args.root) as store:
            # The round's oracle claims a pooled container started before the launch machinery is
            # imported (as `oracle launch` does: supervisor.Supervisor.warm).
            async with Supervisor(store) as supervisor, supervisor.warm(1, one_shot=True) as pool:
                run = await run_review(supervisor, args.proposal_id, on_phase=on_phase)
                body = run.to_dict()
                await end_when_answered(args, supervisor, pool, review_run_answer(body))
    return review_run_answer(body)


def _run_detached(args: argparse.Namespace) -> dict[str, Any]:
    root = check_reviewable(args.root, args.proposal_id)
    child = start_detached(root, ["review", "run", args.proposal_id, "--wait", "--json"], "review-run")
    agents = child.announced.get("agents", [])
    return {
        "review": {
            "proposal_id": args.proposal_id,
            "round": child.announced.get("round"),
            "agents": agents,
            "detached": True,
            "pid": child.pid,
            "log": str(child.log),
        },
        "message": f"review round {child.announced.get('round')} of {args.proposal_id} runs in the "
        f"background ({', '.join(agents)}; pid {child.pid}, log {child.log}); follow it with "
        f"`roundtable timeline {args.proposal_id}`",
    }


def register_subcommands(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add ``review run`` to the ``review`` group."""
    run = sub.add_parser(
        "run", parents=[common], help="run a review round: the oracle and configured reviewers, in containers"
    )
    run.add_argument("proposal_id", metavar="P")
    run.add_argument("--wait", action="store_true", help="wait for every launch and print the outcome")
    run.add_argument("--announce-fd", type=int, help=argparse.SUPPRESS)
    run.set_defaults(handler=_run)
