"""The MCP layer: a registry of thin tools and their names, dispatch through the policy, the MCP server.

:class:`RoundtableMCPServer` is exported lazily so that importing this package does not import the
MCP SDK's server.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from capabilities.mcp._dispatch import ToolOutcome, call_tool
from capabilities.mcp._listing import (
    INSTRUCTIONS,
    PRINCIPAL_SCOPE_KEY,
    SERVER_NAME,
    message_json,
    result_text,
    tool_call_json,
    tool_entries,
    tool_result_json,
)
from capabilities.mcp._names import ToolNaming, tool_naming, underscore_alias
from capabilities.mcp._registry import BuiltAnswer, ToolArgs, ToolCall, ToolRegistry, ToolResult, ToolSpec

if TYPE_CHECKING:
    from capabilities.mcp._server import RoundtableMCPServer

__all__ = [
    "INSTRUCTIONS",
    "PRINCIPAL_SCOPE_KEY",
    "SERVER_NAME",
    "BuiltAnswer",
    "RoundtableMCPServer",
    "ToolArgs",
    "ToolCall",
    "ToolNaming",
    "ToolOutcome",
    "ToolRegistry",
    "ToolResult",
    "ToolSpec",
    "call_tool",
    "message_json",
    "result_text",
    "tool_call_json",
    "tool_entries",
    "tool_naming",
    "tool_result_json",
    "underscore_alias",
]

_LAZY = {"RoundtableMCPServer": "capabilities.mcp._server"}


def __getattr__(name: str) -> Any:
    """Import the heavy exports on first use (PEP 562)."""
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
