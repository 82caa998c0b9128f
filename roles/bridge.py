"""The launch channel as a standard MCP stdio server: ``python -m roles.bridge``.

An MCP-speaking agent (a coding-agent CLI, an agent framework, a script) starts its servers from an
``mcpServers`` configuration, and the servers it can start are programs speaking MCP on stdin and
stdout; it cannot speak HTTP over a Unix socket, and a role container has no network. The bridge is
that program. It opens the launch channel the way every program in the role image does
(:func:`roles.channel.open_channel`: the socket and the token file named by ``ROUNDTABLE_MCP_SOCKET``
and ``ROUNDTABLE_TOKEN_FILE``, else found in ``ROUNDTABLE_CHANNEL_DIR``), then serves MCP on stdio
with the SDK's low-level server, forwarding to the channel:

* ``tools/list``: the grant's tools as the supervisor lists them (names, titles, descriptions,
  input and output schemas, annotations), page by page, unchanged;
* ``tools/call``: the call, and its answer unchanged (``content``, ``structuredContent``,
  ``isError``): a refused call stays a refusal with its error code. A JSON-RPC error from the
  supervisor reaches the agent as the same error.

The bridge adds nothing and holds no state: who the agent is and what it may do come from the grant
the supervisor bound the socket to. The token stays in its file; the agent never sees it.

It takes no arguments. Exit status: 0 when the agent closes stdin; 2 no launch channel (no socket);
3 no grant (no token file, or the supervisor refused it); 1 anything else. Every failure prints one
line on stderr. Stdout carries MCP messages and nothing else: while serving, the SDK points the
process's own stdout at stderr, so a stray print cannot corrupt the stream.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from roles.channel import ChannelError, ChannelPaths, open_channel

__all__ = ["main"]

_NAME = "roles.bridge"


async def _serve(paths: ChannelPaths) -> None:
    async with open_channel(paths) as channel:
        upstream = channel.client

        async def list_tools(
            ctx: ServerRequestContext[object], params: types.PaginatedRequestParams | None
        ) -> types.ListToolsResult:
            cursor = params.cursor if params is not None else None
            return await upstream.list_tools(cursor=cursor, cache_mode="refresh")

        async def call_tool(
            ctx: ServerRequestContext[object], params: types.CallToolRequestParams
        ) -> types.CallToolResult:
            return await upstream.call_tool(params.name, params.arguments)

        info = upstream.server_info
        server: Server[object] = Server(
            info.name if info is not None else "roundtable",
            version=info.version if info is not None else "",
            instructions=upstream.instructions,
            on_list_tools=list_tools,
            on_call_tool=call_tool,
        )
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())


def _cause(exc: BaseException) -> BaseException:
    """The error inside the exception groups of the SDK's task groups (a channel error first)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        channel = [e for e in exc.exceptions if isinstance(_cause(e), ChannelError)]
        exc = channel[0] if channel else exc.exceptions[0]
    return exc


def main(argv: Sequence[str] | None = None) -> int:
    """Serve MCP on stdio until the client closes stdin; return the exit status (module docstring)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args:
        print(
            f"{_NAME}: takes no arguments (got {' '.join(args)}); the ROUNDTABLE_* environment "
            "variables name its channel",
            file=sys.stderr,
        )
        return 1
    try:
        anyio.run(_serve, ChannelPaths.from_environment())
    except Exception as exc:  # one line for the agent's log; no traceback to parse
        cause = _cause(exc)
        if isinstance(cause, ChannelError):
            print(f"{_NAME}: {cause}", file=sys.stderr)
            return cause.status
        print(f"{_NAME}: failed: {type(cause).__name__}: {cause}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
