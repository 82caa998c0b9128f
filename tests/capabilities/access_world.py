"""A project in which every role can make every call: the fixture of the access-table tests.

:func:`build` makes proposals by implementer-1 (the Implementer under test) and by implementer-2,
in review with Reviewer and Security voting, one with consensus, memory entries written by the
operator and by each implementer, an oracle warning, and one principal per role (agent tokens and
a capability minted for real, so every principal carries its credential). :func:`arguments` gives,
for a role and a tool, a call on the role's *own* target that the tool accepts, and, for an
``own`` cell, the same call aimed at someone else's target.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from capabilities.auth import issue_agent_token, issue_capability, principal_from_record
from capabilities.principals import Principal, local_operator
from capabilities.services import Services
from store import OracleStore, Store
from store.memory import MemoryWriter
from tests.store.work_helpers import DIFF, DIFF_V2, SECURITY_DIFF, new_task, seed_files

__all__ = ["AGENT_OF", "LAUNCHED", "ROLES", "World", "arguments", "build", "services_of"]

ROLES = ("operator", "Implementer", "Reviewer", "Security", "memory_oracle", "reviewer", "security")
"""The rows of the access table."""

AGENT_OF = {"Implementer": "implementer-1", "Reviewer": "reviewer-1", "Security": "security-1"}
"""The roster agent that plays each agent role."""

LAUNCHED = {"memory_oracle": "memory-oracle-1", "reviewer": "reviewer-2", "security": "security-1"}
"""The agent of each launched role's capability (all bound to the proposal ``mine``)."""

OTHER_AGENT = {"Implementer": "implementer-2", "Reviewer": "reviewer-2", "Security": "reviewer-2"}
"""Another agent of the roster, whom a role must not be able to act as."""


@dataclass(frozen=True)
class World:
    """IDs and principals of one fresh project (see the module docstring)."""

    store: Store
    principals: dict[str, Principal]
    task_id: str
    mine: str  # by implementer-1, in review (Reviewer and Security vote), the oracle's proposal
    theirs: str  # by implementer-2, in review (Reviewer and Security vote)
    draft_mine: str  # by implementer-1, no round yet
    draft_theirs: str  # by implementer-2, no round yet
    ready: str  # by implementer-2, with consensus: patch.apply may run
    memory_op: str
    memory_mine: str  # written by implementer-1's credential
    memory_theirs: str  # written by implementer-2's credential
    warning_event_id: int


def _proposal(store: Store, task_id: str, agent: str, *, patch: str = SECURITY_DIFF, review: bool) -> str:
    proposal, _ = store.proposals.create(task_id=task_id, agent_id=agent, title="t", patch=patch, actor="op")
    if review:
        store.reviews.request_review(proposal_id=proposal["id"], actor="op")
    return str(proposal["id"])


def _agent(store: Store, agent_id: str) -> Principal:
    issued = issue_agent_token(store, name=f"{agent_id}-token", agent_id=agent_id, actor="op")
    return principal_from_record(store.grants.authenticate(issued.token), store.config.agents)


def build(store: Store) -> World:
    """A fresh world in ``store`` (its project directory gets the files the diffs apply to)."""
    seed_files(store.paths.root)
    task = new_task(store)
    mine = _proposal(store, task.id, "implementer-1", review=True)
    theirs = _proposal(store, task.id, "implementer-2", review=True)
    draft_mine = _proposal(store, task.id, "implementer-1", patch=DIFF, review=False)
    draft_theirs = _proposal(store, task.id, "implementer-2", patch=DIFF, review=False)
    ready = _proposal(store, task.id, "implementer-2", patch=DIFF, review=True)
    for agent in ("reviewer-1", "reviewer-2"):
        store.reviews.cast(proposal_id=ready, agent_id=agent, vote="approve", reason_md="ok", actor="op")
    memory_op = store.memory.record(scope="project", kind="decision", title="d", body_md="b", actor="op").id

    def written_by(agent: str) -> str:
        return store.memory.record(
            scope="project",
            kind="fact",
            title=agent,
            body_md="b",
            actor=agent,
            writer=MemoryWriter.agent(agent),
        ).id

    principals = {"operator": local_operator()}
    for role, agent in LAUNCHED.items():
        agent_arg = None if role == "memory_oracle" else agent
        issued = issue_capability(
            store, proposal_id=mine, role=role, actor="op", ttl_seconds=3600, agent_id=agent_arg
        )
        principals[role] = principal_from_record(store.grants.authenticate(issued.token))
    oracle = principals["memory_oracle"].grant
    assert oracle is not None
    warning = OracleStore(store.db, store.config).warn(oracle, message_md="m", cited_memory_ids=[memory_op])
    principals |= {role: _agent(store, agent) for role, agent in AGENT_OF.items()}
    return World(
        store=store,
        principals=principals,
        task_id=task.id,
        mine=mine,
        theirs=theirs,
        draft_mine=draft_mine,
        draft_theirs=draft_theirs,
        ready=ready,
        memory_op=memory_op,
        memory_mine=written_by("implementer-1"),
        memory_theirs=written_by("implementer-2"),
        warning_event_id=int(warning["id"]),
    )


_Args = Callable[[World, str], dict[str, Any]]


def _vote_target(world: World, role: str) -> str:
    if role in LAUNCHED:
        return world.mine  # a launched reviewer votes on its own proposal
    return world.theirs  # implementer-1 wrote "mine"; every voter is a candidate on "theirs"


def _bound_role(role: str) -> bool:
    return role in LAUNCHED


def _memory(title: str = "t", **extra: Any) -> dict[str, Any]:
    return {"scope": "project", "kind": "fact", "title": title, "body_md": "b"} | extra


_OWN: dict[str, _Args] = {
    "memory.query": lambda w, r: {"query": "t"},
    "memory.summarize": lambda w, r: {},
    "memory.record": lambda w, r: _memory(
        **({"memory_id": w.memory_mine} if r == "Implementer" else {}),
        **({"scope": w.task_id} if r in ("reviewer", "security") else {}),
    ),
    "memory.mark_stale": lambda w, r: {"memory_id": w.memory_op, "reason_md": "superseded"},
    "task.create": lambda w, r: {"title": "new task"},
    "task.get": lambda w, r: {"task_id": w.task_id},
    "task.list": lambda w, r: {},
    "task.history": lambda w, r: {},
    "proposal.create": lambda w, r: {
        "task_id": w.task_id,
        "title": "t",
        "patch": DIFF,
        **({"agent_id": "implementer-1"} if r == "operator" else {}),
    },
    "proposal.attach_patch": lambda w, r: {"proposal_id": w.draft_mine, "patch": DIFF_V2},
    "proposal.get": lambda w, r: {"proposal_id": w.mine},
    "proposal.list": lambda w, r: {},
    "proposal.request_review": lambda w, r: {"proposal_id": w.draft_mine},
    "proposal.timeline": lambda w, r: {"proposal_id": w.mine},
    "patch.inspect": lambda w, r: {} if _bound_role(r) else {"proposal_id": w.mine},
    "patch.validate": lambda w, r: {"proposal_id": w.mine},
    "vote.list": lambda w, r: {"proposal_id": w.mine},
    "vote.cast": lambda w, r: {
        "proposal_id": _vote_target(w, r),
        "vote": "approve",
        "reason_md": "looks right",
        **({"agent_id": "reviewer-1"} if r == "operator" else {}),
    },
    "decision.record": lambda w, r: {"outcome": "noted", "rationale_md": "r", "proposal_id": w.mine},
    "patch.reject": lambda w, r: {"proposal_id": w.mine, "reason_md": "no"},
    "patch.apply": lambda w, r: {"proposal_id": w.ready},
    "oracle.warn": lambda w, r: {"message_md": "m", "cited_memory_ids": [w.memory_op]},
    "oracle.feedback": lambda w, r: {"warning_event_id": w.warning_event_id, "verdict": "confirmed"},
    "oracle.stats": lambda w, r: {},
    "review.run": lambda w, r: {"proposal_id": w.mine},
}
"""A call on the role's own target, which the tool accepts when the role may make it."""

_FOREIGN: dict[str, _Args] = {
    "memory.record": lambda w, r: _memory(memory_id=w.memory_theirs),
    "proposal.create": lambda w, r: {**_OWN["proposal.create"](w, r), "agent_id": OTHER_AGENT[r]},
    "proposal.attach_patch": lambda w, r: {"proposal_id": w.draft_theirs, "patch": DIFF_V2},
    "proposal.request_review": lambda w, r: {"proposal_id": w.draft_theirs},
    "vote.cast": lambda w, r: {**_OWN["vote.cast"](w, r), "agent_id": OTHER_AGENT[r]},
}
"""For each ``own`` cell: the same call aimed at another agent's work or identity."""


def arguments(world: World, role: str, tool: str, *, foreign: bool = False) -> dict[str, Any]:
    """The arguments of ``tool`` for ``role``: on its own target, or (``foreign``) on someone else's."""
    table = _FOREIGN if foreign else _OWN
    return table[tool](world, role)


def foreign_tools() -> frozenset[str]:
    """The tools that have a foreign-target variant (every ``own`` cell must be among them)."""
    return frozenset(_FOREIGN)


def own_tools() -> frozenset[str]:
    """The tools that have an own-target call (every registered tool must be among them)."""
    return frozenset(_OWN)


def _no_containers(store: Store) -> Callable[..., Awaitable[dict[str, Any]]]:
    """A review runner for authorization tests: answers the shape the real runner answers (the
    round, no launches, the votes and consensus as they stand) and starts nothing (the real runner
    is proved with the Docker engine in tests/e2e/test_review_run.py)."""

    async def run(proposal_id: str, *, actor: str) -> dict[str, Any]:
        proposal = await store.db.run(store.proposals.get, proposal_id)
        votes, consensus = await store.db.run(store.reviews.list, proposal_id=proposal_id)
        return {
            "proposal_id": proposal_id,
            "round": proposal["review_round"],
            "launches": [],
            "votes": [vote.to_dict() for vote in votes],
            "warnings": [],
            "consensus": consensus,
            "seconds": 0.0,
        }

    return run


def services_of(world: World) -> Services:
    """The services every access test calls tools through."""
    return Services(world.store, review_runner=_no_containers(world.store))
