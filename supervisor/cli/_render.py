"""The readable text of each command's answer (without ``--json``): a few lines or a table.

One function per answer shape, each taking the answer dict the command prints with ``--json``
and returning its text. Commands attach them with ``set_defaults(render=...)``, so the rendering
stays apart from what a handler does. Full IDs are printed (they are what the next command takes;
any unique prefix works too), never the whole patch or proposal object.
"""

from __future__ import annotations

from typing import Any

from supervisor.cli._output import clean, first_line, paint
from supervisor.cli._table import Styled, table

__all__ = [
    "render_attached",
    "render_decision",
    "render_gc",
    "render_patch_apply",
    "render_patch_validate",
    "render_proposal",
    "render_proposal_created",
    "render_proposal_list",
    "render_rejected",
    "render_review_round",
    "render_task",
    "render_task_get",
    "render_task_list",
    "render_vote",
    "render_vote_list",
]

_STATUS_STYLE = {
    "accepted": "green",
    "applied": "green",
    "rejected": "red",
    "revision_requested": "yellow",
    "withdrawn": "dim",
}
_VOTE_STYLE = {"approve": "green", "approve_with_notes": "green", "reject": "red", "veto": "red"}


def _status(value: object) -> str:
    return paint(clean(value), _STATUS_STYLE.get(str(value), "cyan"))


def _more(body: dict[str, Any]) -> list[str]:
    cursor = body.get("next_cursor")
    return [f"more: --cursor {cursor}"] if cursor else []


def _consensus(consensus: dict[str, Any] | None) -> str:
    if not consensus:
        return "consensus: -"
    state = "reached" if consensus.get("reached") else "not reached"
    return f"consensus: {consensus.get('approvals')}/{consensus.get('required')} approvals, {state}"


def _patch_line(patch: dict[str, Any] | None) -> str:
    if not patch:
        return "no patch"
    files = ", ".join(patch.get("files", [])) or "no files"
    return clean(
        f"patch v{patch.get('version')} ({patch.get('size_bytes')} B, sha256 "
        f"{str(patch.get('sha256', ''))[:12]}): {files}"
    )


# -- tasks -------------------------------------------------------------------------------------


def render_task(body: dict[str, Any]) -> str:
    """``task create``: the task's ID, title and state."""
    task = body["task"]
    return (
        f"task {task['id']} {clean(repr(task['title']))} created ({_status(task['status'])}, "
        f"priority {task['priority']}, risk {task['risk']})"
    )


def render_task_get(body: dict[str, Any]) -> str:
    """``task get``: the task, its description's first line and its proposals."""
    task = body["task"]
    lines = [
        f"task {task['id']} {clean(repr(task['title']))}",
        f"{_status(task['status'])}; priority {task['priority']}; risk {task['risk']}"
        + (f"; assigned to {clean(task['assignee'])}" if task.get("assignee") else ""),
    ]
    if first_line(task.get("body_md")):
        lines.append(first_line(task["body_md"], 100))
    lines += ["", _proposal_table(body.get("proposals") or [])]
    return "\n".join(lines)


def render_task_list(body: dict[str, Any]) -> str:
    """``task list``: one row per task."""
    rows = [(t["id"], t["status"], t["priority"], t["title"]) for t in body["tasks"]]
    return "\n".join([table(("id", "status", "priority", "title"), rows, empty="(no tasks)"), *_more(body)])


# -- proposals ---------------------------------------------------------------------------------


def _approvals(consensus: dict[str, Any]) -> str:
    return f"{consensus.get('approvals', 0)}/{consensus.get('required', '?')}"


def _proposal_table(proposals: list[dict[str, Any]]) -> str:
    rows = [
        (
            p["id"],
            p["status"],
            f"v{p.get('current_version')}",
            _approvals(p.get("consensus") or {}),
            p.get("agent_id"),
            p.get("title"),
        )
        for p in proposals
    ]
    return table(("id", "status", "patch", "approvals", "author", "title"), rows, empty="(no proposals)")


def render_proposal_created(body: dict[str, Any]) -> str:
    """``proposal create``: the proposal and its patch, once, and the next step."""
    proposal = body["proposal"]
    return "\n".join(
        [
            f"proposal {proposal['id']} {clean(repr(proposal['title']))} by {clean(proposal['agent_id'])}"
            f" ({_status(proposal['status'])}, risk {proposal['risk']})",
            f"  task {proposal['task_id']}",
            f"  {_patch_line(body.get('patch'))}",
            f"next: roundtable review request {proposal['id']}",
        ]
    )


def render_attached(body: dict[str, Any]) -> str:
    """``proposal attach-patch``: the new version and the votes it reset, or that nothing changed."""
    proposal, patch = body["proposal"], body.get("patch") or {}
    if patch.get("unchanged"):
        return (
            f"proposal {proposal['id']}: this diff is byte-identical to patch v{patch.get('version')};"
            f" nothing changed (no new version; status stays {_status(proposal['status'])})"
        )
    invalidated = body.get("invalidated_vote_ids") or []
    lines = [
        f"proposal {proposal['id']}: {_patch_line(patch)} attached; status {_status(proposal['status'])}"
    ]
    if invalidated:
        lines.append(
            f"  {len(invalidated)} vote(s) on the previous version stopped counting: reviewers vote again"
        )
    return "\n".join(lines)


def render_proposal(body: dict[str, Any]) -> str:
    """``proposal get``: heading, summary, versions, the round and the consensus."""
    proposal = body["proposal"]
    lines = [
        f"proposal {proposal['id']} {clean(repr(proposal['title']))} by {clean(proposal['agent_id'])}",
        f"{_status(proposal['status'])}; risk {proposal['risk']}; task {proposal['task_id']}",
    ]
    if first_line(proposal.get("summary_md")):
        lines.append(first_line(proposal["summary_md"], 100))
    versions = proposal.get("versions") or ([proposal["patch"]] if proposal.get("patch") else [])
    rows = [
        (f"v{v['version']}", v["size_bytes"], str(v["sha256"])[:12], v["created_at"], ", ".join(v["files"]))
        for v in versions
    ]
    lines += ["", table(("version", "bytes", "sha256", "created", "files"), rows, empty="(no patch)")]
    review = proposal.get("review_round")
    if review:
        lines += ["", _round_lines(review)[0]]
    lines.append(_consensus(proposal.get("consensus")))
    return "\n".join(lines)


def render_proposal_list(body: dict[str, Any]) -> str:
    """``proposal list``: one row per proposal."""
    return "\n".join([_proposal_table(body["proposals"]), *_more(body)])


# -- reviews, votes, decisions -----------------------------------------------------------------


def _round_lines(review: dict[str, Any]) -> list[str]:
    voters = ", ".join(c["agent_id"] for c in review.get("candidates", [])) or "nobody"
    advisory = ", ".join(
        f"{a['agent_id']} ({'launched' if a.get('launched') else 'not launched'})"
        for a in review.get("advisory", [])
    )
    roles = ", ".join(review.get("voting_roles", []))
    return [
        f"review round {review.get('number')} ({review.get('status')}) on patch"
        f" v{review.get('patch_version')}; voting roles: {roles or '-'}",
        f"  may vote: {clean(voters)}",
        f"  advisory: {clean(advisory or '-')}",
    ]


def render_review_round(body: dict[str, Any]) -> str:
    """``review request``: who may vote, who advises, and that nothing was started."""
    proposal = body["proposal"]
    lines = [f"proposal {proposal['id']}: {_status(proposal['status'])}", *_round_lines(body["round"])]
    lines.append(f"nothing was launched; run the oracle with `roundtable oracle launch {proposal['id']}`")
    return "\n".join(lines)


def render_vote(body: dict[str, Any]) -> str:
    """``vote cast``: the vote, whether it counts, what it replaced, and the proposal after it."""
    vote = body["vote"]
    counts = "counts" if vote.get("counts") else "does not count"
    lines = [
        f"vote {vote['id']}: {clean(vote['agent_id'])} ({vote.get('role')}) "
        f"{paint(clean(vote['vote']), _VOTE_STYLE.get(str(vote['vote']), 'yellow'))} on patch "
        f"v{vote.get('patch_version')} [{counts}]"
    ]
    if vote.get("replaces"):
        lines.append(
            f"  replaces {clean(vote['agent_id'])}'s earlier vote {vote['replaces']}"
            " (only an agent's latest vote counts; both stay on record)"
        )
    status = _status(body.get("proposal_status"))
    lines.append(f"proposal {vote['proposal_id']}: {status}; {_consensus(body.get('consensus'))}")
    return "\n".join(lines)


def render_vote_list(body: dict[str, Any]) -> str:
    """``vote list``: one row per vote on record, and the consensus."""
    rows = [
        (
            v["id"],
            v["agent_id"],
            Styled(v["vote"], _VOTE_STYLE.get(str(v["vote"]), "") if v.get("counts") else "dim"),
            f"v{v.get('patch_version')}",
            "yes" if v.get("counts") else "no",
            first_line(v.get("reason_md"), 60),
        )
        for v in body["votes"]
    ]
    headers = ("id", "agent", "vote", "patch", "counts", "reason")
    return "\n".join([table(headers, rows, empty="(no votes)"), _consensus(body.get("consensus"))])


def render_decision(body: dict[str, Any]) -> str:
    """``decision record``: the decision, and the proposal's status when it is about one."""
    decision = body["decision"]
    about = decision.get("proposal_id") or decision.get("task_id")
    line = f"decision {decision['id']} {clean(decision['outcome'])} on {about}"
    if decision.get("supersedes"):
        line += f" (supersedes {decision['supersedes']})"
    lines = [line, f"  {first_line(decision.get('rationale_md'), 100)}"]
    if body.get("proposal"):
        lines.append(f"proposal {body['proposal']['id']}: {_status(body['proposal']['status'])}")
    return "\n".join(lines)


def render_rejected(body: dict[str, Any]) -> str:
    """``patch reject``: the proposal is rejected, by which decision."""
    decision = body["decision"]
    return (
        f"proposal {body['proposal']['id']}: {_status(body['proposal']['status'])} "
        f"(decision {decision['id']}): {first_line(decision.get('rationale_md'), 100)}"
    )


def _check_rows(checks: list[dict[str, Any]]) -> list[tuple[Styled, str, str]]:
    def state(check: dict[str, Any]) -> Styled:
        if check.get("skipped"):
            return Styled("skipped", "dim")
        return Styled("ok", "green") if check.get("ok") else Styled("FAIL", "red")

    return [(state(c), str(c.get("name")), clean(c.get("detail") or "", 100)) for c in checks]


def render_patch_validate(body: dict[str, Any]) -> str:
    """``patch validate``: the verdict and one line per check."""
    verdict = paint("valid", "green") if body.get("ok") else paint("NOT valid", "red")
    head = f"patch v{body.get('version')} of {body.get('proposal_id')}: {verdict}"
    return "\n".join([head, table(("result", "check", "detail"), _check_rows(body.get("checks") or []))])


def render_patch_apply(body: dict[str, Any]) -> str:
    """``patch apply``: the transaction's outcome and the proposal's status."""
    txn = body.get("transaction") or {}
    proposal = body.get("proposal") or {}
    return "\n".join(
        [
            f"proposal {proposal.get('id')}: {_status(proposal.get('status'))}; "
            f"transaction {txn.get('id')} {clean(txn.get('status'))}",
            table(("result", "check", "detail"), _check_rows(body.get("checks") or [])),
        ]
    )


def render_gc(body: dict[str, Any]) -> str:
    """``gc``: what was removed, kept and rolled back."""
    patches = body.get("patches") or {}
    removed, kept = patches.get("removed") or [], patches.get("kept_recent") or []
    applies = body.get("interrupted_applies") or []
    lines = [
        f"removed {len(removed)} orphaned patch file(s); kept {len(kept)} too recent to judge",
        f"rolled back {len(applies)} interrupted apply(s)",
    ]
    lines += [f"  removed {clean(path)}" for path in removed]
    return "\n".join(lines)
