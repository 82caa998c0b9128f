"""One MCP application for every principal, on every transport.

:class:`RoundtableMCPServer` is the SDK's ``MCPServer`` with a toolset that depends on the
caller: ``tools/list`` shows a principal exactly the tools its policy allows, and ``tools/call``
goes through :func:`capabilities.mcp._dispatch.call_tool`, which checks the policy again. The
principal comes from the transport: fixed for stdio (the local operator), and put into the ASGI
scope by the authentication middleware for HTTP (TCP or a Unix socket).

Tools are listed with the spelling the server was built with (:class:`ToolNaming`: dotted by
default, or underscore aliases for clients that refuse dots) and callable by either.

Why override ``list_tools``/``call_tool`` rather than register functions with ``@tool``: the SDK's
tool manager has one global list and validates arguments with its own messages, while Roundtable
needs per-principal lists and one structured error vocabulary shared with the CLI and HTTP API.
"""

from __future__ import annotations

from typing import Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult, TextContent
from mcp_types import Tool as MCPTool

from capabilities.mcp._dispatch import call_tool
from capabilities.mcp._listing import (
    INSTRUCTIONS,
    PRINCIPAL_SCOPE_KEY,
    SERVER_NAME,
    result_text,
    tool_entries,
)
from capabilities.mcp._names import ToolNaming
from capabilities.mcp._registry import ToolRegistry
from capabilities.principals import Principal, current_principal
from capabilities.services import Services
from store.config import package_version

__all__ = ["PRINCIPAL_SCOPE_KEY", "RoundtableMCPServer", "tool_result"]


def tool_result(body: dict[str, Any], *, is_error: bool) -> CallToolResult:
    """JSON as ``structuredContent`` and the same JSON as text content (:func:`result_text`)."""
    text = result_text(body)
    return CallToolResult(
        content=[TextContent(type="text", text=text)], structured_content=body, is_error=is_error
    )


class RoundtableMCPServer(MCPServer[Any]):
    """The MCP server: per-principal tool lists over one registry."""

    def __init__(
        self,
        services: Services,
        registry: ToolRegistry,
        *,
        default_principal: Principal | None = None,
        name: str = SERVER_NAME,
        tool_names: ToolNaming = ToolNaming.DOTTED,
    ):
        super().__init__(
            name=name,
            version=package_version(),
            instructions=INSTRUCTIONS,
            middleware=[self._bind_principal],
            log_level="WARNING",
        )
        self.services = services
        self.registry = registry
        self.default_principal = default_principal
        self.tool_names = tool_names

    async def _bind_principal(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        """Resolve the caller of this request and expose it to the handlers."""
        principal = self.default_principal
        request = ctx.request
        scope = getattr(request, "scope", None)
        if isinstance(scope, dict):
            found = scope.get(PRINCIPAL_SCOPE_KEY)
            principal = found if isinstance(found, Principal) else None
        token = current_principal.set(principal)
        try:
            return await call_next(ctx)
        finally:
            current_principal.reset(token)

    async def list_tools(self) -> list[MCPTool]:
        """The tools the current principal may call, and nothing else, named as :attr:`tool_names` says."""
        return [
            MCPTool.model_validate(entry)
            for entry in tool_entries(self.registry, current_principal.get(), self.tool_names)
        ]

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> CallToolResult:
        """Run a tool for the current principal; errors come back as structured error results.

        ``name`` may be either spelling, whichever :attr:`tool_names` lists.
        """
        outcome = await call_tool(self.services, self.registry, current_principal.get(), name, arguments)
        return tool_result(outcome.body(), is_error=not outcome.ok)
