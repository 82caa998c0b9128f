"""``roundtable mcp stdio``: the MCP server over stdio for the local operator."""

from __future__ import annotations

import argparse
from typing import Any

from capabilities.mcp.tools import build_registry
from capabilities.principals import local_operator
from supervisor.cli._project import open_services

__all__ = ["register"]


async def _stdio(args: argparse.Namespace) -> None:
    from capabilities.mcp import RoundtableMCPServer  # the SDK is heavy; import it only to serve

    with open_services(args.root) as services:
        server = RoundtableMCPServer(services, build_registry(), default_principal=local_operator())
        await server.run_stdio_async()


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    """Add ``mcp stdio``."""
    mcp = commands.add_parser("mcp", parents=[common], help="serve the MCP tools")
    sub = mcp.add_subparsers(dest="mcp_command", metavar="TRANSPORT", parser_class=type(mcp))
    sub.required = True
    stdio = sub.add_parser("stdio", parents=[common], help="MCP over stdin/stdout for the local operator")
    stdio.set_defaults(handler=_stdio)
