"""The tool policy: which principal may call which tool. Policy is data, kept apart from tools.

Every registered tool must appear here (a meta-test enforces it); a tool that appears in no
toolset is denied to everyone. A capability principal may call a tool only when it is both in its
role's toolset and in the tool list stored on its grant row.
"""

from __future__ import annotations

from capabilities.principals import Principal, PrincipalKind

# The oracle's allow-list has one source: its role definition in roles/, which holds each role's
# prompt, tool list and limits. The runner reads that module inside the role image, where no
# capabilities code is installed, so the policy reads the role, never the other way round; roles
# is a leaf package (it imports nothing of ours), so this adds no cycle. tests/test_layout.py
# allows exactly this one import from roles.
from roles.oracle import MEMORY_ORACLE

__all__ = [
    "MEMORY_ORACLE_TOOLS",
    "OPERATOR_TOOLS",
    "ROLE_TOOLSETS",
    "is_allowed",
    "policy_tool_names",
    "toolset_for",
]

OPERATOR_TOOLS: frozenset[str] = frozenset(
    {
        # memory
        "memory.query",
        "memory.record",
        "memory.summarize",
        "memory.mark_stale",
        # work
        "task.create",
        "task.get",
        "task.list",
        "proposal.create",
        "proposal.attach_patch",
        "proposal.get",
        "proposal.list",
        "proposal.request_review",
        "proposal.timeline",
        "vote.cast",
        "vote.list",
        "decision.record",
        "patch.reject",
        "patch.validate",
        "patch.apply",
        # oracle feedback (maintainers judge the oracle's warnings; the oracle may not)
        "oracle.feedback",
        "oracle.stats",
    }
)
"""The operator toolset (stdio and operator tokens). It has no ``oracle.warn``."""

MEMORY_ORACLE_TOOLS: frozenset[str] = MEMORY_ORACLE.tools
"""Exactly what a MemoryOracle capability may call, bound to its proposal (the role's own list)."""

ROLE_TOOLSETS: dict[str, frozenset[str]] = {
    "operator": OPERATOR_TOOLS,
    MEMORY_ORACLE.name: MEMORY_ORACLE_TOOLS,
}
"""Each role's allow-list."""


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
    return role_tools


def is_allowed(principal: Principal | None, tool: str) -> bool:
    """Whether ``principal`` may call ``tool``."""
    return tool in toolset_for(principal)
