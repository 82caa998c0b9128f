"""What a launch hands an unmodified MCP agent: an ``mcpServers`` file and the environment naming it.

Standard MCP clients start their servers from a JSON configuration (``{"mcpServers": {name:
{"command", "args", "env"}}}``) and talk to them over stdio; they cannot reach the launch socket
(HTTP over a Unix socket, with a bearer token) and the container has no network. So the
configuration names one stdio server, ``roundtable``: the bridge shipped in the role image
(``python -m roles.bridge``), which forwards every request to the launch socket with the grant's
token. The supervisor writes :func:`mcp_client_config` as :data:`MCP_CONFIG_FILE` into the launch's
runtime directory and passes :func:`client_environment` as the container's environment.

Nothing here is secret: the variables name files, and the token stays in its file (0400, read by
the bridge only when it opens the channel).
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any

from supervisor.launch._runtime_dir import CONTAINER_MOUNT, SOCKET_FILE, TOKEN_FILE
from supervisor.launch._spec import ROLE_PYTHON

__all__ = ["MCP_CONFIG_FILE", "MCP_SERVER_NAME", "client_environment", "mcp_client_config"]

MCP_CONFIG_FILE = "mcp.json"
"""The name of the ``mcpServers`` file in the runtime directory."""

MCP_SERVER_NAME = "roundtable"
"""The key of the bridge's entry under ``mcpServers``."""

_BRIDGE_COMMAND = (ROLE_PYTHON, "-m", "roles.bridge")
"""How the role image runs the bridge: its virtualenv's interpreter (deploy/Dockerfile)."""


def client_environment(channel_dir: str = CONTAINER_MOUNT) -> dict[str, str]:
    """The variables naming the channel as the container sees it (``channel_dir``, default the mount).

    ``ROUNDTABLE_CHANNEL_DIR`` (the directory), ``ROUNDTABLE_MCP_SOCKET`` (the socket),
    ``ROUNDTABLE_TOKEN_FILE`` (the token's file, not the token) and ``ROUNDTABLE_MCP_CONFIG`` (the
    ``mcpServers`` file).
    """
    base = PurePosixPath(channel_dir)
    return {
        "ROUNDTABLE_CHANNEL_DIR": str(base),
        "ROUNDTABLE_MCP_SOCKET": str(base / SOCKET_FILE),
        "ROUNDTABLE_TOKEN_FILE": str(base / TOKEN_FILE),
        "ROUNDTABLE_MCP_CONFIG": str(base / MCP_CONFIG_FILE),
    }


def mcp_client_config(channel_dir: str = CONTAINER_MOUNT) -> dict[str, Any]:
    """The standard ``mcpServers`` configuration: one stdio server, the bridge, with the channel's env."""
    command, *args = _BRIDGE_COMMAND
    return {
        "mcpServers": {
            MCP_SERVER_NAME: {"command": command, "args": args, "env": client_environment(channel_dir)}
        }
    }
