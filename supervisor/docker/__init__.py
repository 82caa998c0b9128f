"""The Docker engine behind a small async interface, the hardened Docker launcher, and the reaper
that removes the containers of launches whose supervisor died."""

from __future__ import annotations

from supervisor.docker._client import DockerClient
from supervisor.docker._launcher import DockerLauncher, Launcher
from supervisor.docker._reaper import OrphanHook, ReapReport, reap

__all__ = ["DockerClient", "DockerLauncher", "Launcher", "OrphanHook", "ReapReport", "reap"]
