"""The tool policy: which caller may call which tool, and how far. Policy is data, kept apart from tools.

:data:`ACCESS` is the whole table, role by tool, and docs/agents.md publishes it (a test checks the
two agree). A cell is a :class:`Reach`:

- ``any``: on any target the tool accepts;
- ``own``: only as itself and on its own work: an ``agent_id`` argument must name the caller (or be
  omitted), a proposal must be one it authored, a memory entry one it wrote, and it never sets an
  entry's lifecycle state;
- ``bound``: only inside the capability's proposal, task and scopes (a launched role's grant).

Every registered tool must appear in the table (a meta-test enforces it); a tool no role has is
denied to everyone. A capability principal may call a tool only when it is both in its role's
toolset and in the tool list stored on its grant row. Who a caller *is* comes from its principal
(the credential the transport verified), never from an argument.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from types import MappingProxyType
from typing import Final

from capabilities.principals import Principal, PrincipalKind

# The oracle's allow-list has one source: its role definition in roles/, which holds each role's
# prompt, tool list and limits. The runner reads that module inside the role image, where no
# capabilities code is installed, so the policy reads the role, never the other way round; roles
# is a leaf package (it imports nothing of ours), so this adds no cycle. tests/test_layout.py
# allows exactly this one import from roles.
from roles.oracle import MEMORY_ORACLE
from store.access import GrantRecord
from store.errors import Forbidden, InvalidArgument

__all__ = [
    "ACCESS",
    "AGENT_ROLES",
    "CAPABILITY_TOOLSETS",
    "LAUNCH_ROLE_OF",
    "MEMORY_ORACLE_ROLE",
    "MEMORY_ORACLE_TOOLS",
    "OPERATOR",
    "OPERATOR_TOOLS",
    "REVIEWER_LAUNCH",
    "ROLE_TOOLSETS",
    "SECURITY_LAUNCH",
    "Reach",
    "acting_agent",
    "agent_role",
    "is_allowed",
    "policy_tool_names",
    "reach_of",
    "record_scopes",
    "require_author",
    "toolset_for",
]

OPERATOR: Final = "operator"
"""The operator's role name (the local operator, operator tokens)."""


class Reach(StrEnum):
    """How far a role's use of a tool reaches (see the module docstring)."""

    ANY = "any"
    OWN = "own"
    BOUND = "bound"


_READS: Final = frozenset(
    {
        "memory.query",
        "memory.summarize",
        "task.get",
        "task.list",
        "proposal.get",
        "proposal.list",
        "proposal.timeline",
        "patch.inspect",
        "patch.validate",
        "vote.list",
    }
)
"""What every roster agent may read: proposals, timelines, patches, votes, tasks and memory."""

_OPERATOR_ONLY: Final = frozenset(
    {
        "decision.record",
        "patch.reject",
        "patch.apply",
        "memory.mark_stale",
        "oracle.feedback",
        "oracle.stats",
        "review.run",
    }
)
"""Decisions, reject and apply, memory curation, judging the oracle, and starting containers
(running a review round): operators alone."""


def _cells(reach: Reach, tools: frozenset[str]) -> dict[str, Reach]:
    return dict.fromkeys(sorted(tools), reach)


MEMORY_ORACLE_ROLE: Final = MEMORY_ORACLE.name
"""The launch role of the MemoryOracle (``memory_oracle``)."""
REVIEWER_LAUNCH: Final = "reviewer"
"""The launch role of a Reviewer agent run in a container by ``review run``."""
SECURITY_LAUNCH: Final = "security"
"""The launch role of a Security agent run in a container by ``review run``."""

_LAUNCHED_REVIEWER_TOOLS: Final = frozenset(
    {
        "proposal.get",
        "proposal.timeline",
        "task.history",
        "patch.inspect",
        "memory.query",
        "memory.summarize",
        "memory.record",
        "vote.cast",
    }
)
"""A launched reviewer reads its proposal, task history, patch and memory, records memory in its
task, and votes as itself in the open round; nothing else, and only on its own proposal."""

_AUTHORING: Final = frozenset({"proposal.create", "proposal.attach_patch", "proposal.request_review"})
"""What an Implementer does as itself, on its own proposals: create, attach versions, ask for review."""

ACCESS: Final[MappingProxyType[str, MappingProxyType[str, Reach]]] = MappingProxyType(
    {
        role: MappingProxyType(cells)
        for role, cells in {
            OPERATOR: _cells(
                Reach.ANY,
                _READS | _OPERATOR_ONLY | _AUTHORING | {"task.create", "memory.record", "vote.cast"},
            ),
            "Implementer": {
                **_cells(Reach.ANY, _READS | {"task.create"}),  # a task is always created as the caller
                **_cells(Reach.OWN, _AUTHORING | {"memory.record"}),
            },
            "Reviewer": {**_cells(Reach.ANY, _READS), "vote.cast": Reach.OWN},
            "Security": {**_cells(Reach.ANY, _READS), "vote.cast": Reach.OWN},
            MEMORY_ORACLE.name: _cells(Reach.BOUND, MEMORY_ORACLE.tools),
            REVIEWER_LAUNCH: _cells(Reach.BOUND, _LAUNCHED_REVIEWER_TOOLS),
            SECURITY_LAUNCH: _cells(Reach.BOUND, _LAUNCHED_REVIEWER_TOOLS),
        }.items()
    }
)
"""Role by tool: the reach of every call a role may make (absent: refused with ``forbidden``).

``operator`` is the local operator and operator tokens; ``Implementer``, ``Reviewer`` and
``Security`` are the roster roles of ``[agents]`` acting through agent tokens; the lowercase rows
are launched roles, each a capability bound to one proposal and its own agent (``memory_oracle``,
and ``reviewer``/``security``: a Reviewer or Security agent run by ``roundtable review run``).
"""

AGENT_ROLES: Final = frozenset({"Implementer", "Reviewer", "Security"})
"""The roster roles an agent token (or ``mcp stdio --agent``) may act in."""

LAUNCH_ROLE_OF: Final = MappingProxyType({"Reviewer": REVIEWER_LAUNCH, "Security": SECURITY_LAUNCH})
"""The launch role a voting roster role runs as when ``review run`` launches it."""

OPERATOR_TOOLS: Final = frozenset(ACCESS[OPERATOR])
"""The operator toolset (stdio and operator tokens). It has no ``oracle.warn``."""

MEMORY_ORACLE_TOOLS: Final = MEMORY_ORACLE.tools
"""Exactly what a MemoryOracle capability may call, bound to its proposal (the role's own list)."""

CAPABILITY_TOOLSETS: Final[dict[str, frozenset[str]]] = {
    role: frozenset(ACCESS[role]) for role in (MEMORY_ORACLE.name, REVIEWER_LAUNCH, SECURITY_LAUNCH)
}
"""The roles a capability grant can be minted for (by launch role name), with the tools it carries."""

ROLE_TOOLSETS: Final[dict[str, frozenset[str]]] = {role: frozenset(cells) for role, cells in ACCESS.items()}
"""Each role's allow-list."""

_TASK_SCOPE_WRITERS: Final = frozenset({REVIEWER_LAUNCH, SECURITY_LAUNCH})


def record_scopes(grant: GrantRecord) -> frozenset[str]:
    """The scopes a capability may record memory in: a launched reviewer its task only, the oracle
    its task and the project."""
    return frozenset({grant.task_id}) if grant.role in _TASK_SCOPE_WRITERS else grant.scopes


def agent_role(roster: Mapping[str, str], agent_id: object) -> str:
    """The roster role of ``agent_id`` if it may act through an agent credential (else ``invalid_argument``).

    It must be on the roster (``[agents]``) in one of :data:`AGENT_ROLES`: a MemoryOracle runs
    only as a launched capability bound to one proposal.
    """
    role = roster.get(agent_id) if isinstance(agent_id, str) else None
    if role is None:
        known = ", ".join(sorted(roster)) or "none"
        raise InvalidArgument(f"agent {agent_id!r} is not in the [agents] roster (known: {known})")
    if role not in AGENT_ROLES:
        raise InvalidArgument(
            f"agent {agent_id!r} is a {role}; agent credentials exist for the roles "
            f"{', '.join(sorted(AGENT_ROLES))} (a MemoryOracle runs only as a launch)"
        )
    return role


def policy_tool_names() -> frozenset[str]:
    """Every tool that some role may call."""
    names: frozenset[str] = frozenset()
    for tools in ROLE_TOOLSETS.values():
        names |= tools
    return names


def toolset_for(principal: Principal | None) -> frozenset[str]:
    """The tools ``principal`` may see and call (nothing for an unknown caller)."""
    if principal is None:
        return frozenset()
    role_tools = ROLE_TOOLSETS.get(principal.role, frozenset())
    if principal.kind is PrincipalKind.CAPABILITY:
        if principal.grant is None:
            return frozenset()
        return role_tools & principal.grant.tools
    if principal.kind is PrincipalKind.AGENT and principal.role not in AGENT_ROLES:
        return frozenset()
    return role_tools


def is_allowed(principal: Principal | None, tool: str) -> bool:
    """Whether ``principal`` may call ``tool`` at all (its reach is checked by the tool)."""
    return tool in toolset_for(principal)


def reach_of(principal: Principal, tool: str) -> Reach | None:
    """How far ``principal`` may use ``tool`` (``None``: not at all)."""
    if not is_allowed(principal, tool):
        return None
    if principal.kind is PrincipalKind.CAPABILITY:
        return Reach.BOUND
    cells = ACCESS.get(principal.role)
    return None if cells is None else cells.get(tool)


def acting_agent(principal: Principal, claimed: str | None, *, field: str = "agent_id") -> str:
    """The agent a call acts as: the caller itself, whatever it may claim.

    An operator acts for any agent it names (and must name one). Anyone else is its own agent: an
    omitted ``field`` means the caller, and one naming another agent is :class:`Forbidden`.
    """
    if principal.is_operator:
        if claimed in (None, ""):
            raise InvalidArgument(f"{field} is required: an operator acts on behalf of a named agent")
        assert claimed is not None
        return claimed
    own = principal.actor
    if claimed not in (None, "", own):
        raise Forbidden(f"this credential acts as {own!r}; it cannot act as {claimed!r}")
    return own


def require_author(principal: Principal, author: object, *, tool: str) -> None:
    """:class:`Forbidden` unless ``principal`` may use ``tool`` on work authored by ``author``.

    Only ``own`` reach is limited (to the caller's own work); operators and bound capabilities pass.
    """
    if reach_of(principal, tool) is Reach.OWN and author != principal.actor:
        raise Forbidden(f"{tool} on another agent's work: it is {author!r}'s, not {principal.actor!r}'s")
