"""Principals, capability grants, the tool policy, the MCP tool handlers and the MCP server.

Depends on :mod:`store` only; nothing here imports :mod:`supervisor`. The MCP server itself is
:class:`capabilities.mcp._server.RoundtableMCPServer`, imported from its module so that commands which
do not serve MCP do not pay for importing the SDK.
"""

from __future__ import annotations

from capabilities.mcp import ToolArgs, ToolCall, ToolOutcome, ToolRegistry, ToolSpec, call_tool
from capabilities.mcp.tools import all_tools, build_registry
from capabilities.policy import MEMORY_ORACLE_TOOLS, OPERATOR_TOOLS, ROLE_TOOLSETS, is_allowed, toolset_for
from capabilities.principals import Principal, PrincipalKind, current_principal, local_operator
from capabilities.services import Services

__all__ = [
    "MEMORY_ORACLE_TOOLS",
    "OPERATOR_TOOLS",
    "ROLE_TOOLSETS",
    "Principal",
    "PrincipalKind",
    "Services",
    "ToolArgs",
    "ToolCall",
    "ToolOutcome",
    "ToolRegistry",
    "ToolSpec",
    "all_tools",
    "build_registry",
    "call_tool",
    "current_principal",
    "is_allowed",
    "local_operator",
    "toolset_for",
]
