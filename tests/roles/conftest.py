"""Fixtures for the role side's tests: a served launch socket."""

from __future__ import annotations

import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from capabilities.services import Services
from capabilities.serving import LaunchSocketApp, serve_launch_socket
from roles.channel import ChannelPaths
from store import Store
from tests.capabilities.oracle_helpers import build_world


@pytest.fixture
async def paths(store: Store) -> AsyncIterator[ChannelPaths]:
    """A served launch socket for an oracle grant, and its token file."""
    world = build_world(store)
    with tempfile.TemporaryDirectory(prefix="rtm-", dir="/tmp") as tmp:
        directory = Path(tmp)
        (directory / "token").write_text(world.token)
        app = LaunchSocketApp(Services(store=store), world.grant_id)
        async with serve_launch_socket(app, directory / "mcp.sock"):
            yield ChannelPaths(directory / "mcp.sock", directory / "token")
