"""Role launches: the supervisor, launch specs, runtime directories, ownership and the reaper."""

from __future__ import annotations

from supervisor.launch._reaper import OrphanHook, ReapReport, reap
from supervisor.launch._runtime_dir import RuntimeRoot
from supervisor.launch._spec import (
    ContainerOutcome,
    LaunchLimits,
    LaunchPhase,
    LaunchSpec,
    container_kwargs,
    container_name,
)
from supervisor.launch._supervisor import Supervisor

__all__ = [
    "ContainerOutcome",
    "LaunchLimits",
    "LaunchPhase",
    "LaunchSpec",
    "OrphanHook",
    "ReapReport",
    "RuntimeRoot",
    "Supervisor",
    "container_kwargs",
    "container_name",
    "reap",
]
