"""The tool policy: which principal may call which tool. Policy is data, kept apart from tools.

Every registered tool must appear here (a meta-test enforces it); a tool that appears in no
toolset is denied to everyone. A capability principal may call a tool only when it is both in its
role's toolset and in the tool list stored on its grant row.
"""

from __future__ import annotations

from capabilities.principals import Principal, PrincipalKind

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
    }
)
"""The operator toolset (stdio and operator tokens). It has no ``oracle.warn``."""

MEMORY_ORACLE_TOOLS: frozenset[str] = frozenset(
    {"task.history", "patch.inspect", "memory.query", "memory.record", "memory.summarize", "oracle.warn"}
)
"""Exactly what a MemoryOracle capability may call, bound to its proposal."""

ROLE_TOOLSETS: dict[str, frozenset[str]] = {
    "operator": OPERATOR_TOOLS,
    "memory_oracle": MEMORY_ORACLE_TOOLS,
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
