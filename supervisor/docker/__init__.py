"""The Docker engine behind a small async interface, the hardened Docker launcher, the warm pool of
started containers a launch claims, and the reaper that removes the containers of launches whose
supervisor died."""

from __future__ import annotations

from typing import TYPE_CHECKING

from store import lazy_exports

if TYPE_CHECKING:
    from supervisor.docker._client import DockerClient
    from supervisor.docker._ending import (
        Abort,
        RunningLaunches,
        check_requested,
        record_abort,
        record_end,
        recover,
    )
    from supervisor.docker._hooks import (
        Claimed,
        PhaseHook,
        Spawn,
        call_hook,
        call_hook_quietly,
        failure_reason,
    )
    from supervisor.docker._launcher import DockerLauncher, Launcher
    from supervisor.docker._pool import WarmPool, acquire_slot
    from supervisor.docker._pooled import PooledContainer
    from supervisor.docker._prestart import Prestart, begin_prestart, config_digest
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
    "Prestart",
    "ReapReport",
    "RunningLaunches",
    "Spawn",
    "WarmPool",
    "acquire_slot",
    "begin_prestart",
    "call_hook",
    "call_hook_quietly",
    "check_requested",
    "config_digest",
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

_EXPORTS: dict[str, tuple[str, ...]] = {
    "supervisor.docker._client": ("DockerClient",),
    "supervisor.docker._ending": (
        "Abort",
        "RunningLaunches",
        "check_requested",
        "record_abort",
        "record_end",
        "recover",
    ),
    "supervisor.docker._hooks": (
        "Claimed",
        "PhaseHook",
        "Spawn",
        "call_hook",
        "call_hook_quietly",
        "failure_reason",
    ),
    "supervisor.docker._launcher": (
        "DockerLauncher",
        "Launcher",
    ),
    "supervisor.docker._pool": ("WarmPool", "acquire_slot"),
    "supervisor.docker._pooled": ("PooledContainer",),
    "supervisor.docker._prestart": ("Prestart", "begin_prestart", "config_digest"),
    "supervisor.docker._reaper": (
        "OrphanHook",
        "ReapReport",
        "notify_orphans",
        "reap",
        "reap_expired_owners",
        "take_ownership",
        "watch_expired_owners",
    ),
}
if not TYPE_CHECKING:  # for mypy, the imports above: a misspelt name is an error
    __getattr__ = lazy_exports(__name__, _EXPORTS)
