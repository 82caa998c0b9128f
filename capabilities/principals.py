"""Who is calling: the principal behind an MCP or HTTP request.

A principal is decided by the transport, never by the caller's arguments: the local operator on
stdio, an operator token on HTTP, a roster agent (an agent token on HTTP, or ``mcp stdio --agent``),
or a role capability (a grant row) on HTTP or a launch socket.
A capability principal carries its grant, the store's :class:`~store.access.GrantRecord` itself
(proposal, task, agent, scopes, tools); tool handlers read identity and scope from here only.
"""

from __future__ import annotations

import contextvars
from dataclasses import dataclass
from enum import StrEnum

from store.access import GrantRecord
from store.memory import MemoryWriter

__all__ = [
    "Principal",
    "PrincipalKind",
    "current_principal",
    "local_agent",
    "local_operator",
]


class PrincipalKind(StrEnum):
    """The kinds of caller."""

    OPERATOR = "operator"
    AGENT = "agent"
    """A roster agent acting as itself, with its roster role's toolset (an agent token)."""
    CAPABILITY = "capability"


@dataclass(frozen=True)
class Principal:
    """The authenticated caller of a tool."""

    kind: PrincipalKind
    name: str
    role: str
    grant: GrantRecord | None = None
    """The grant row a capability principal was authenticated by, as the store returned it."""
    credential_id: str | None = None
    """The operator token or grant row this principal was authenticated by (``None`` on stdio)."""

    @property
    def actor(self) -> str:
        """The name written into events and audit rows."""
        return self.grant.agent_id if self.grant is not None else self.name

    @property
    def is_operator(self) -> bool:
        """Whether this is the local operator or an operator token."""
        return self.kind is PrincipalKind.OPERATOR

    @property
    def memory_writer(self) -> MemoryWriter:
        """Who the store records as the writer of the memory this caller writes."""
        if self.grant is not None:
            return MemoryWriter.grant(self.grant.id)
        if self.is_operator:
            return MemoryWriter.operator(self.name)
        return MemoryWriter.agent(self.name)

    @property
    def agent_id(self) -> str | None:
        """The roster agent this caller is (``None`` for an operator, who acts for any agent)."""
        return None if self.is_operator else self.actor


def local_operator(name: str = "operator") -> Principal:
    """The operator on the local machine (stdio, the CLI)."""
    return Principal(kind=PrincipalKind.OPERATOR, name=name, role="operator")


def local_agent(agent_id: str, role: str) -> Principal:
    """A roster agent on the local machine (``mcp stdio --agent``); its role comes from the roster."""
    return Principal(kind=PrincipalKind.AGENT, name=agent_id, role=role)


current_principal: contextvars.ContextVar[Principal | None] = contextvars.ContextVar(
    "roundtable_principal", default=None
)
"""The principal of the MCP request being handled (set by the server's middleware)."""
