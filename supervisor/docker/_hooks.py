"""What a launch's caller hands the launcher besides its spec: the phase hook, a claimed container, a
way to run clean-up steps in the background; and how a failing hook fails the launch."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any

import structlog

from store.errors import DockerUnavailable, LaunchFailed, RoundtableError
from supervisor.launch import LaunchPhase

__all__ = ["Claimed", "PhaseHook", "Spawn", "call_hook", "call_hook_quietly", "failure_reason"]

_log = structlog.get_logger("roundtable.launcher")

PhaseHook = Callable[[LaunchPhase], Awaitable[None] | None]
"""Called with each :class:`LaunchPhase`; may be sync or async. Its exceptions fail the launch."""

Spawn = Callable[[Callable[[], Coroutine[Any, Any, None]]], object]
"""Runs a clean-up step in the background (a task group's ``start_soon``)."""


@dataclass(frozen=True)
class Claimed:
    """A started container a launch takes over instead of creating one (a warm pool's): its id, and
    ``release``, which lets it go on (the claim's go line)."""

    container_id: str
    release: Callable[[], Awaitable[None]]


class _HookFailed(LaunchFailed):
    """The ``on_phase`` hook raised; the launch fails with reason ``hook_failed``."""


def failure_reason(stage: str, error: RoundtableError) -> str:
    """The launch record's ``reason`` for a launch that failed at ``stage`` with ``error``."""
    if isinstance(error, DockerUnavailable):
        return "docker_unavailable"
    if isinstance(error, _HookFailed):
        return "hook_failed"
    return f"{stage}_failed"


async def call_hook(hook: PhaseHook | None, phase: LaunchPhase) -> None:
    """Call ``hook`` with ``phase``; its failure fails the launch (reason ``hook_failed``)."""
    if hook is None:
        return
    try:
        result = hook(phase)
        if inspect.isawaitable(result):
            await result
    except Exception as exc:
        raise _HookFailed(f"the on_phase hook failed at {phase}: {exc}") from exc


async def call_hook_quietly(hook: PhaseHook | None, phase: LaunchPhase, launch_id: str) -> None:
    """Call ``hook`` during a clean-up: its failure is logged, never raised over the original error."""
    try:
        await call_hook(hook, phase)
    except Exception as exc:
        _log.error("phase_hook_failed", launch_id=launch_id, phase=str(phase), error=str(exc))
