"""``roundtable mcp stdio``: the MCP server over stdio, for the local operator or one roster agent.

With ``--agent AGENT_ID`` the server serves that agent's toolset and acts as that agent, for a
local agent whose MCP entry the operator writes. On one machine that is a convenience, not a
boundary: whoever can start this command can read ``.roundtable/`` directly. Containers and
tokens are the boundary (docs/agents.md).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from supervisor.cli._project import open_services
from supervisor.cli.commands import add_command

if TYPE_CHECKING:
    from capabilities.principals import Principal
    from store import Store

__all__ = ["add_tool_names_option", "register"]


TOOL_NAMES_HELP = (
    'how tools/list spells tool names: "dotted" (memory.query) or "underscore" (memory_query, for '
    "clients that refuse dots); both are callable (default: [mcp] tool_names in config.toml, dotted)"
)
"""The help of ``--tool-names`` (``mcp stdio`` and ``serve`` share the option)."""


def add_tool_names_option(parser: argparse.ArgumentParser) -> None:
    """Add ``--tool-names dotted|underscore`` (default: the config's ``[mcp] tool_names``)."""
    parser.add_argument("--tool-names", choices=("dotted", "underscore"), default=None, help=TOOL_NAMES_HELP)


async def _stdio(args: argparse.Namespace) -> None:
    from capabilities.mcp import RoundtableMCPServer, tool_naming  # the SDK is heavy; import it only to serve
    from capabilities.mcp.tools import build_registry
    from capabilities.principals import local_operator
    from supervisor.review import ReviewService

    with open_services(args.root) as services:
        principal = local_operator() if args.agent is None else _agent(services.store, args.agent)
        reviews = ReviewService(services.store)
        services.review_runner = reviews
        naming = tool_naming(args.tool_names, services.store.config)
        server = RoundtableMCPServer(
            services, build_registry(), default_principal=principal, tool_names=naming
        )
        try:
            await server.run_stdio_async()
        finally:
            await reviews.aclose()


def _agent(store: Store, agent_id: str) -> Principal:
    """The principal of roster agent ``agent_id`` (refused off the roster and for launch-only roles)."""
    from capabilities.policy import agent_role
    from capabilities.principals import local_agent

    return local_agent(agent_id, agent_role(store.config.agents, agent_id))


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    """Add ``mcp stdio``."""
    mcp = add_command(commands, "mcp", common)
    sub = mcp.add_subparsers(dest="mcp_command", metavar="TRANSPORT", parser_class=type(mcp))
    sub.required = True
    stdio = sub.add_parser("stdio", parents=[common], help="MCP over stdin/stdout for the local operator")
    stdio.add_argument(
        "--agent",
        metavar="AGENT_ID",
        default=None,
        help="serve this roster agent's toolset, acting as it (default: the operator's)",
    )
    add_tool_names_option(stdio)
    stdio.set_defaults(handler=_stdio)
