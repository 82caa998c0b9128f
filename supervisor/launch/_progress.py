"""Progress of launches, as ``(phase, details)`` for whoever is watching (progress lines on stderr)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

__all__ = ["PhaseReporter", "report_phase"]

PhaseReporter = Callable[[str, dict[str, Any]], Awaitable[None] | None]
"""Receives ``(phase, details)`` as a launch progresses; may be a plain or an async function."""


async def report_phase(reporter: PhaseReporter | None, phase: str, details: dict[str, Any]) -> None:
    """Tell ``reporter`` (if any) that ``phase`` was reached."""
    if reporter is None:
        return
    result = reporter(phase, details)
    if result is not None:
        await result
