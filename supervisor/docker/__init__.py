"""The Docker engine behind a small async interface, the hardened Docker launcher, the warm pool of
started containers a launch claims, and the reaper that removes the containers of launches whose
supervisor died."""

from __future__ import annotations

from supervisor.docker._client import DockerClient
from supervisor.docker._ending import (
    Abort,
    RunningLaunches,
    check_requested,
    record_abort,
    record_end,
    recover,
)
from supervisor.docker._hooks import Claimed, PhaseHook, Spawn, call_hook, call_hook_quietly, failure_reason
from supervisor.docker._launcher import DockerLauncher, Launcher
from supervisor.docker._pool import PooledContainer, WarmPool
from supervisor.docker._reaper import (
    OrphanHook,
    ReapReport,
    notify_orphans,
    reap,
    reap_expired_owners,
    take_ownership,
    watch_expired_owners,
)

__all__ = [
    "Abort",
    "Claimed",
    "DockerClient",
    "DockerLauncher",
    "Launcher",
    "OrphanHook",
    "PhaseHook",
    "PooledContainer",
    "ReapReport",
    "RunningLaunches",
    "Spawn",
    "WarmPool",
    "call_hook",
    "call_hook_quietly",
    "check_requested",
    "failure_reason",
    "notify_orphans",
    "reap",
    "reap_expired_owners",
    "record_abort",
    "record_end",
    "recover",
    "take_ownership",
    "watch_expired_owners",
]
