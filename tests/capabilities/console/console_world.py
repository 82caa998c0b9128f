"""A proposal with everything the console's pages render: Markdown written by agents (with injection
attempts), a warning on the current patch and an outdated one, a launched reviewer's whole launch,
votes of each kind, a status change, an entry cited by warnings, and an oracle summary.
"""

from __future__ import annotations

from dataclasses import dataclass

from capabilities.auth import issue_capability, principal_from_record
from capabilities.mcp import call_tool
from capabilities.mcp.tools import build_registry
from capabilities.services import Services
from store.launches import LaunchStatus
from tests.capabilities.api_helpers import seed_review
from tests.store.work_helpers import DIFF, new_task

__all__ = ["HOSTILE", "ConsoleWorld", "build_console_world"]

HOSTILE = "<script>alert('x')</script><img src=x onerror=alert(1)> [bad](javascript:alert(1))"
"""Injection attempts appended to every piece of Markdown the world writes."""


@dataclass(frozen=True)
class ConsoleWorld:
    """IDs of what :func:`build_console_world` made."""

    proposal_id: str  # two patch versions; warnings on v1 (outdated) and v2 (current)
    quiet_proposal_id: str  # no warning at all
    decision_id: str  # cited by both warnings
    rules_id: str  # a Markdown body, cited by the current warning
    uncited_id: str  # cited by nothing
    summary_id: str  # the oracle's summary, recorded through its capability
    launch_id: str  # reviewer-1's launch: requested, granted, created, started, usage, exited, revoked
    old_warning_event: int
    new_warning_event: int


async def build_console_world(services: Services) -> ConsoleWorld:
    store = services.store
    registry = build_registry()
    seeded = seed_review(store)  # the v1 warning; v2 attached since; reviewer-2 approved v2
    pid = seeded["proposal_id"]
    rules = store.memory.record(
        scope="project",
        kind="decision",
        title="Shouting rules",
        body_md=f"# Why\n\n- **never** shout\n- `lower` case only\n\n> quoted\n\n{HOSTILE}",
        actor="op",
    )
    uncited = store.memory.record(scope="project", kind="fact", title="Uncited", body_md="x", actor="op")

    oracle = issue_capability(store, proposal_id=pid, role="memory_oracle", actor="op", ttl_seconds=600)
    principal = principal_from_record(store.grants.authenticate(oracle.token))
    warned = await call_tool(
        services, registry, principal, "oracle.warn",
        {
            "message_md": f"**Check against** the decision: `TWO` shouts.\n\n{HOSTILE}",
            "cited_memory_ids": [seeded["decision_id"], rules.id],
            "severity": "critical",
            "confidence": 0.9,
        },
    )  # fmt: skip
    assert warned.ok, warned.body()
    summary = await call_tool(
        services, registry, principal, "memory.record",
        {"scope": seeded["task_id"], "kind": "summary", "title": "Oracle notes on v2",
         "body_md": f"- relied on {seeded['decision_id']}"},
    )  # fmt: skip
    assert summary.ok, summary.body()
    store.reviews.cast(
        proposal_id=pid, agent_id="reviewer-2", vote="abstain", reason_md="*not my area*", actor="op"
    )

    # reviewer-1 runs in a container and asks for changes: the launch's whole plumbing.
    launch = store.launches.request(
        role="reviewer", agent_id="reviewer-1", proposal_id=pid, image="my-agent:7", provider="mcp"
    )
    grant = issue_capability(
        store, proposal_id=pid, role="reviewer", agent_id="reviewer-1", actor="supervisor",
        launch_id=launch.id,
    )  # fmt: skip
    store.launches.mark_starting(launch.id, "c0ffee" * 10)
    store.launches.mark_running(launch.id)
    reviewer = principal_from_record(store.grants.authenticate(grant.token))
    cast = await call_tool(
        services, registry, reviewer, "vote.cast",
        {"proposal_id": pid, "vote": "revise",
         "reason_md": f"**Shouting** breaks `lower case`.\n\n{HOSTILE}"},
    )  # fmt: skip
    assert cast.ok, cast.body()
    store.launches.record_usage(launch.id, {"requests": 3, "total_tokens": 1200})
    store.launches.finish(launch.id, LaunchStatus.EXITED, exit_code=0)
    store.grants.revoke_for_launch(launch.id, actor="supervisor", reason="launch_ended")

    quiet, _ = store.proposals.create(
        task_id=new_task(store).id, agent_id="implementer-2", title="A quiet one", patch=DIFF, actor="op"
    )
    warning_events = [
        e for e in store.timeline.timeline(pid)["events"] if e["type"] == "memory.oracle_warning"
    ]
    return ConsoleWorld(
        proposal_id=pid,
        quiet_proposal_id=quiet["id"],
        decision_id=seeded["decision_id"],
        rules_id=rules.id,
        uncited_id=uncited.id,
        summary_id=summary.body()["entry"]["id"],
        launch_id=launch.id,
        old_warning_event=int(warning_events[0]["id"]),
        new_warning_event=int(warning_events[1]["id"]),
    )
