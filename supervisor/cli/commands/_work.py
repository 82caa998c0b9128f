"""The work commands: ``task``, ``proposal``, ``review``, ``vote``, ``decision``, ``patch``,
``timeline`` and ``gc``.

Each subcommand calls the same MCP tool, with the same arguments and answers, on behalf of the
local operator (through :func:`capabilities.mcp._dispatch.call_tool`, like every transport). Patches
are read from ``--patch FILE`` (``-`` for stdin), size-checked against ``policy.max_patch_bytes``
and decoded as strict UTF-8 before the tool sees them.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from store.errors import InvalidArgument
from supervisor.cli._project import open_project, open_services, operator_call, run_operator_tool
from supervisor.cli._timeline_text import render_timeline
from supervisor.cli.commands import LazyRenderer, _review, add_command

__all__ = ["register"]


def _read_patch_file(name: str, max_bytes: int) -> str:
    """The patch text of ``FILE`` (``-``: stdin), refused past the limit or when not UTF-8."""
    from store.patches import decode_patch

    try:
        if name == "-":
            data = sys.stdin.buffer.read(max_bytes + 1)
        else:
            with open(Path(name), "rb") as handle:
                data = handle.read(max_bytes + 1)
    except OSError as exc:
        raise InvalidArgument(f"cannot read the patch file {name}: {exc.strerror or exc}") from None
    return decode_patch(data, max_bytes=max_bytes)


async def _with_patch(
    root: str | None, tool: str, patch_file: str, arguments: dict[str, Any], *, ids: dict[str, str]
) -> dict[str, Any]:
    import anyio.to_thread

    with open_services(root) as services:
        limit = services.store.config.policy.max_patch_bytes
        text = await anyio.to_thread.run_sync(_read_patch_file, patch_file, limit)
        return await operator_call(services, tool, {**arguments, "patch": text}, ids=ids)


# The arguments a user may give as a unique ID prefix, as git takes an abbreviated hash.
_PROPOSAL = {"proposal_id": "proposal"}
_TASK = {"task_id": "task"}


def _given(**values: Any) -> dict[str, Any]:
    return {key: value for key, value in values.items() if value is not None}


# -- handlers ----------------------------------------------------------------------------------


async def _task_create(args: argparse.Namespace) -> dict[str, Any]:
    return await run_operator_tool(
        args.root,
        "task.create",
        _given(
            title=args.title,
            body_md=args.body,
            priority=args.priority,
            risk=args.risk,
            assignee=args.assignee,
        ),
    )


async def _task_get(args: argparse.Namespace) -> dict[str, Any]:
    return await run_operator_tool(args.root, "task.get", {"task_id": args.task_id}, ids=_TASK)


async def _task_list(args: argparse.Namespace) -> dict[str, Any]:
    return await run_operator_tool(
        args.root, "task.list", _given(status=args.status, limit=args.limit, cursor=args.cursor)
    )


async def _proposal_create(args: argparse.Namespace) -> dict[str, Any]:
    arguments = _given(
        task_id=args.task,
        agent_id=args.agent,
        title=args.title,
        summary_md=args.summary,
        risk=args.risk,
        affected_resources=args.affected or None,
        expected_tests=args.expected_test or None,
        rollback_notes_md=args.rollback_notes,
    )
    return await _with_patch(args.root, "proposal.create", args.patch, arguments, ids=_TASK)


async def _proposal_attach(args: argparse.Namespace) -> dict[str, Any]:
    return await _with_patch(
        args.root, "proposal.attach_patch", args.patch, {"proposal_id": args.proposal_id}, ids=_PROPOSAL
    )


async def _proposal_get(args: argparse.Namespace) -> dict[str, Any]:
    return await run_operator_tool(
        args.root, "proposal.get", {"proposal_id": args.proposal_id}, ids=_PROPOSAL
    )


async def _proposal_list(args: argparse.Namespace) -> dict[str, Any]:
    arguments = _given(task_id=args.task, status=args.status, limit=args.limit, cursor=args.cursor)
    return await run_operator_tool(args.root, "proposal.list", arguments, ids=_TASK)


async def _review_request(args: argparse.Namespace) -> dict[str, Any]:
    return await run_operator_tool(
        args.root, "proposal.request_review", {"proposal_id": args.proposal_id}, ids=_PROPOSAL
    )


async def _vote_cast(args: argparse.Namespace) -> dict[str, Any]:
    arguments = {
        "proposal_id": args.proposal_id,
        "agent_id": args.agent,
        "vote": args.vote,
        "reason_md": args.reason,
    }
    return await run_operator_tool(args.root, "vote.cast", arguments, ids=_PROPOSAL)


async def _vote_list(args: argparse.Namespace) -> dict[str, Any]:
    arguments = _given(
        proposal_id=args.proposal_id,
        patch_version=args.version,
        counting_only=True if args.counting else None,
    )
    return await run_operator_tool(args.root, "vote.list", arguments, ids=_PROPOSAL)


async def _decision_record(args: argparse.Namespace) -> dict[str, Any]:
    arguments = _given(
        proposal_id=args.proposal,
        task_id=args.task,
        outcome=args.outcome,
        rationale_md=args.rationale,
        supersedes=args.supersedes,
    )
    ids = {**_PROPOSAL, **_TASK, "supersedes": "decision"}
    return await run_operator_tool(args.root, "decision.record", arguments, ids=ids)


async def _patch_validate(args: argparse.Namespace) -> dict[str, Any]:
    return await run_operator_tool(
        args.root, "patch.validate", _given(proposal_id=args.proposal_id, version=args.version), ids=_PROPOSAL
    )


async def _patch_apply(args: argparse.Namespace) -> dict[str, Any]:
    return await run_operator_tool(args.root, "patch.apply", {"proposal_id": args.proposal_id}, ids=_PROPOSAL)


async def _patch_reject(args: argparse.Namespace) -> dict[str, Any]:
    return await run_operator_tool(
        args.root, "patch.reject", {"proposal_id": args.proposal_id, "reason_md": args.reason}, ids=_PROPOSAL
    )


async def _timeline(args: argparse.Namespace) -> dict[str, Any]:
    body = await run_operator_tool(
        args.root, "proposal.timeline", {"proposal_id": args.proposal_id}, ids=_PROPOSAL
    )
    if args.json:
        return body
    return {"message": render_timeline(body)}


_MAX_GRACE_SECONDS = 10 * 365 * 86400


async def _gc(args: argparse.Namespace) -> dict[str, Any]:
    # Also refuses nan and inf (float() takes both), which would crash timedelta, not parse.
    if not 0 <= args.grace <= _MAX_GRACE_SECONDS:
        raise InvalidArgument(f"--grace must be a number of seconds from 0 to {_MAX_GRACE_SECONDS}")
    with open_project(args.root) as store:
        applies = await store.db.run(
            store.workspace.recover_interrupted, grace_seconds=args.grace, actor="gc"
        )
        patches = await store.db.run(store.patches.collect_garbage, grace_seconds=args.grace)
    return {"patches": patches, "interrupted_applies": applies}


# -- parsers -----------------------------------------------------------------------------------


def _group(commands: Any, common: argparse.ArgumentParser, name: str) -> Any:
    parser = add_command(commands, name, common)
    sub = parser.add_subparsers(dest=f"{name}_command", metavar="ACTION", parser_class=type(parser))
    sub.required = True
    return sub


def _paging(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--limit", type=int, help="page size, 1..500 (default 50)")
    parser.add_argument("--cursor", help="next_cursor of the previous page")


def _register_tasks(commands: Any, common: argparse.ArgumentParser) -> None:
    sub = _group(commands, common, "task")
    create = sub.add_parser("create", parents=[common], help="create a task")
    create.add_argument("--title", required=True)
    create.add_argument("--body", "--body-md", dest="body", help="Markdown description")
    create.add_argument("--priority", help="low, normal, high or urgent")
    create.add_argument("--risk", help="low, normal, high or critical (the default risk of its proposals)")
    create.add_argument("--assignee", help="the agent the task is assigned to")
    create.set_defaults(handler=_task_create, render=LazyRenderer("_render", "render_task"))
    get = sub.add_parser("get", parents=[common], help="one task and its proposals")
    get.add_argument("task_id", metavar="T")
    get.set_defaults(handler=_task_get, render=LazyRenderer("_render", "render_task_get"))
    listing = sub.add_parser("list", parents=[common], help="tasks, oldest first")
    listing.add_argument("--status")
    _paging(listing)
    listing.set_defaults(handler=_task_list, render=LazyRenderer("_render", "render_task_list"))


def _register_proposals(commands: Any, common: argparse.ArgumentParser) -> None:
    sub = _group(commands, common, "proposal")
    create = sub.add_parser("create", parents=[common], help="propose a patch for a task")
    create.add_argument("--task", required=True, metavar="T")
    create.add_argument("--agent", required=True, metavar="A", help="the authoring agent (a roster entry)")
    create.add_argument("--title", required=True, metavar="X")
    create.add_argument("--patch", required=True, metavar="FILE", help="the unified diff ('-': stdin)")
    create.add_argument("--summary", metavar="S", help="what the change does and why (Markdown)")
    create.add_argument("--risk", metavar="R", help="low, normal, high or critical (default: the task's)")
    create.add_argument(
        "--affected", action="append", metavar="RESOURCE", help="an affected resource (repeat)"
    )
    create.add_argument("--expected-test", action="append", metavar="TEST", help="an expected test (repeat)")
    create.add_argument("--rollback-notes", metavar="TEXT", help="how to roll the change back")
    create.set_defaults(handler=_proposal_create, render=LazyRenderer("_render", "render_proposal_created"))
    attach = sub.add_parser("attach-patch", parents=[common], help="attach a new immutable patch version")
    attach.add_argument("proposal_id", metavar="P")
    attach.add_argument("--patch", required=True, metavar="FILE", help="the unified diff ('-': stdin)")
    attach.set_defaults(handler=_proposal_attach, render=LazyRenderer("_render", "render_attached"))
    get = sub.add_parser("get", parents=[common], help="one proposal with every patch version")
    get.add_argument("proposal_id", metavar="P")
    get.set_defaults(handler=_proposal_get, render=LazyRenderer("_render", "render_proposal"))
    listing = sub.add_parser("list", parents=[common], help="proposals, oldest first")
    listing.add_argument("--task", metavar="T")
    listing.add_argument("--status")
    _paging(listing)
    listing.set_defaults(handler=_proposal_list, render=LazyRenderer("_render", "render_proposal_list"))


def _register_reviews(commands: Any, common: argparse.ArgumentParser) -> None:
    sub = _group(commands, common, "review")
    request = sub.add_parser("request", parents=[common], help="open a review round; starts no process")
    request.add_argument("proposal_id", metavar="P")
    request.set_defaults(handler=_review_request, render=LazyRenderer("_render", "render_review_round"))
    _review.register_subcommands(sub, common)

    sub = _group(commands, common, "vote")
    cast = sub.add_parser("cast", parents=[common], help="cast a vote on the current patch version")
    cast.add_argument("proposal_id", metavar="P")
    cast.add_argument("--agent", required=True, metavar="A", help="the voting agent")
    cast.add_argument(
        "--vote",
        required=True,
        metavar="V",
        help="approve, approve_with_notes, revise, reject, veto, abstain",
    )
    cast.add_argument("--reason", required=True, metavar="R", help="why (Markdown)")
    cast.set_defaults(handler=_vote_cast, render=LazyRenderer("_render", "render_vote"))
    listing = sub.add_parser("list", parents=[common], help="every vote, with whether it counts now")
    listing.add_argument("proposal_id", metavar="P")
    listing.add_argument("--version", type=int, help="only votes on this patch version")
    listing.add_argument("--counting", action="store_true", help="only the votes that count now")
    listing.set_defaults(handler=_vote_list, render=LazyRenderer("_render", "render_vote_list"))

    sub = _group(commands, common, "decision")
    record = sub.add_parser("record", parents=[common], help="record a decision about a proposal or a task")
    record.add_argument("--proposal", metavar="P")
    record.add_argument("--task", metavar="T")
    record.add_argument("--outcome", required=True, help="accepted, rejected, withdrawn, deferred or noted")
    record.add_argument("--rationale", required=True, help="the decision and its reasons (Markdown)")
    record.add_argument("--supersedes", metavar="D", help="the decision this one replaces")
    record.set_defaults(handler=_decision_record, render=LazyRenderer("_render", "render_decision"))


def _register_patches(commands: Any, common: argparse.ArgumentParser) -> None:
    sub = _group(commands, common, "patch")
    validate = sub.add_parser(
        "validate", parents=[common], help="check the patch against the project (no change)"
    )
    validate.add_argument("proposal_id", metavar="P")
    validate.add_argument("--version", type=int, help="a patch version (default: the current one)")
    validate.set_defaults(handler=_patch_validate, render=LazyRenderer("_render", "render_patch_validate"))
    apply = sub.add_parser(
        "apply", parents=[common], help="apply the accepted patch, with rollback on failure"
    )
    apply.add_argument("proposal_id", metavar="P")
    apply.set_defaults(handler=_patch_apply, render=LazyRenderer("_render", "render_patch_apply"))
    reject = sub.add_parser("reject", parents=[common], help="reject the proposal's patch")
    reject.add_argument("proposal_id", metavar="P")
    reject.add_argument("--reason", required=True, metavar="R")
    reject.set_defaults(handler=_patch_reject, render=LazyRenderer("_render", "render_rejected"))


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    """Add the work commands."""
    _register_tasks(commands, common)
    _register_proposals(commands, common)
    _register_reviews(commands, common)
    _register_patches(commands, common)
    timeline = add_command(commands, "timeline", common)
    timeline.add_argument("proposal_id", metavar="P")
    timeline.set_defaults(handler=_timeline)
    gc = add_command(commands, "gc", common)
    gc.add_argument(
        "--grace",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="keep files younger than this (default 60)",
    )
    gc.set_defaults(handler=_gc, render=LazyRenderer("_render", "render_gc"))
