"""Fixtures for the role side's tests: a served launch socket."""

from __future__ import annotations

import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from capabilities.services import Services
from capabilities.serving import LaunchSocketApp, serve_launch_socket
from roles.channel import ChannelPaths
from store import Store
from tests.capabilities.oracle_helpers import OracleWorld, build_world


@dataclass(frozen=True)
class Launch:
    """A served launch channel on the host: its directory (socket, token) and its world."""

    directory: Path
    world: OracleWorld

    @property
    def paths(self) -> ChannelPaths:
        """The socket and token file, as roles.channel reads them."""
        return ChannelPaths(self.directory / "mcp.sock", self.directory / "token")


@pytest.fixture
async def launch(store: Store) -> AsyncIterator[Launch]:
    """An oracle grant's launch socket and token file in a short fresh directory."""
    world = build_world(store)
    with tempfile.TemporaryDirectory(prefix="rtm-", dir="/tmp") as tmp:
        directory = Path(tmp)
        (directory / "token").write_text(world.token)
        app = LaunchSocketApp(Services(store=store), world.grant_id)
        async with serve_launch_socket(app, directory / "mcp.sock"):
            yield Launch(directory, world)


@pytest.fixture
def paths(launch: Launch) -> ChannelPaths:
    """A served launch socket for an oracle grant, and its token file."""
    return launch.paths
