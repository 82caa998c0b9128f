"""How a role calls its tools: a small protocol, and its implementation over an MCP client session.

Providers depend on :class:`ToolCaller` only, so the same provider code runs against the real MCP
client in a container and against an in-process caller in unit tests.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Protocol

__all__ = ["McpToolCaller", "ToolCallError", "ToolCaller"]


class ToolCallError(Exception):
    """A tool answered with a structured error."""

    def __init__(self, tool: str, code: str, message: str):
        super().__init__(f"{tool}: [{code}] {message}")
        self.tool = tool
        self.code = code
        self.message = message


class ToolCaller(Protocol):
    """Calls one of the role's tools and returns its JSON answer (or raises :class:`ToolCallError`)."""

    async def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """Call ``tool`` with ``arguments``."""
        ...


class _Session(Protocol):
    async def call_tool(self, name: str, arguments: dict[str, Any]) -> Any: ...


@dataclass
class McpToolCaller:
    """A :class:`ToolCaller` over a connected ``mcp.Client``."""

    client: _Session

    async def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """Call the tool over MCP; decode ``structuredContent`` (or the JSON text content)."""
        result = await self.client.call_tool(tool, arguments)
        body: Any = getattr(result, "structured_content", None)
        if body is None:
            content = getattr(result, "content", None) or []
            text = getattr(content[0], "text", "{}") if content else "{}"
            body = json.loads(text)
        if not isinstance(body, dict):
            raise ToolCallError(tool, "internal", "the tool answered with something other than an object")
        if getattr(result, "is_error", False) or ("error" in body and set(body) == {"error"}):
            error = body.get("error") or {}
            raise ToolCallError(tool, str(error.get("code", "internal")), str(error.get("message", "")))
        return body
