"""What a launch is and what it holds: its spec and limits, its runtime directory, its owner's lock.

The :class:`supervisor.Supervisor` drives launches through a launcher (:mod:`supervisor.docker`)
and cleans up after dead ones with the reaper; both build on this package.
"""

from __future__ import annotations

from supervisor.launch._runtime_dir import RuntimeRoot
from supervisor.launch._spec import (
    ContainerOutcome,
    LaunchLimits,
    LaunchPhase,
    LaunchSpec,
    container_kwargs,
    container_name,
)

__all__ = [
    "ContainerOutcome",
    "LaunchLimits",
    "LaunchPhase",
    "LaunchSpec",
    "RuntimeRoot",
    "container_kwargs",
    "container_name",
]
