"""The Docker engine behind a small async interface, and the hardened Docker launcher."""

from __future__ import annotations

from supervisor.docker._client import DockerClient
from supervisor.docker._launcher import DockerLauncher, Launcher

__all__ = ["DockerClient", "DockerLauncher", "Launcher"]
