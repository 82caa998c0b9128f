"""The MCP client configuration a launch hands an agent: its shape, and that it names what exists.

The variables must be the ones ``roles.channel`` reads (else the bridge looks in the wrong place),
the command must be the role image's interpreter (else the agent cannot start the bridge), and
nothing in either may be the token.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from roles.channel import ChannelPaths
from supervisor.launch import (
    MCP_CONFIG_FILE,
    MCP_SERVER_NAME,
    LaunchSpec,
    RuntimeRoot,
    client_environment,
    mcp_client_config,
)
from tests.conftest import REPO_ROOT


def test_the_configuration_is_one_standard_stdio_server_the_bridge() -> None:
    config = json.loads(json.dumps(mcp_client_config()))  # plain JSON, as written to mcp.json
    assert config == {
        "mcpServers": {
            MCP_SERVER_NAME: {
                "command": "/opt/roundtable/venv/bin/python",
                "args": ["-m", "roles.bridge"],
                "env": {
                    "ROUNDTABLE_CHANNEL_DIR": "/run/roundtable",
                    "ROUNDTABLE_MCP_SOCKET": "/run/roundtable/mcp.sock",
                    "ROUNDTABLE_TOKEN_FILE": "/run/roundtable/token",
                    "ROUNDTABLE_MCP_CONFIG": f"/run/roundtable/{MCP_CONFIG_FILE}",
                },
            }
        }
    }
    assert config["mcpServers"][MCP_SERVER_NAME]["env"] == client_environment()


def test_the_command_is_the_role_image_s_interpreter() -> None:
    dockerfile = (REPO_ROOT / "deploy" / "Dockerfile").read_text(encoding="utf-8")
    entrypoint = re.search(r"^ENTRYPOINT (\[.*\])$", dockerfile, re.MULTILINE)
    assert entrypoint is not None
    interpreter = json.loads(entrypoint[1])[0]
    assert mcp_client_config()["mcpServers"][MCP_SERVER_NAME]["command"] == interpreter


def test_the_variables_are_the_ones_the_channel_reads(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for name in ("ROUNDTABLE_CHANNEL_DIR", "ROUNDTABLE_MCP_SOCKET", "ROUNDTABLE_TOKEN_FILE"):
        monkeypatch.delenv(name, raising=False)
    defaults, env = ChannelPaths.from_environment(), client_environment()
    assert defaults == ChannelPaths(Path(env["ROUNDTABLE_MCP_SOCKET"]), Path(env["ROUNDTABLE_TOKEN_FILE"]))
    moved = str(tmp_path / "elsewhere")
    for name, value in client_environment(moved).items():
        monkeypatch.setenv(name, value)
    paths = ChannelPaths.from_environment()
    assert paths != defaults
    assert paths == ChannelPaths(Path(moved) / "mcp.sock", Path(moved) / "token")


def test_the_runtime_directory_writes_the_configuration_beside_the_socket(tmp_path: Path) -> None:
    rundir = RuntimeRoot("rtcfgtest", base=tmp_path / "rt").create("L-20260101T000000Z-0123456789ab")
    rundir.write_file(MCP_CONFIG_FILE, json.dumps(mcp_client_config()).encode())
    env = client_environment()
    assert env["ROUNDTABLE_MCP_CONFIG"] == rundir.container_path(MCP_CONFIG_FILE)
    assert env["ROUNDTABLE_MCP_SOCKET"] == rundir.container_socket_path
    assert env["ROUNDTABLE_TOKEN_FILE"] == rundir.container_token_path
    assert json.loads((rundir.path / MCP_CONFIG_FILE).read_text()) == mcp_client_config()


def test_a_launch_spec_accepts_the_client_environment() -> None:
    spec = LaunchSpec(
        launch_id="L-20260101T000000Z-0123456789ab",
        role="reviewer",
        proposal_id="P-1",
        image="roundtable-example-agent:0.1.0",
        environment=client_environment(),
    )
    assert dict(spec.environment) == client_environment()
