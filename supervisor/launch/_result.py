"""What a launch answers: its final record and the warnings the role wrote."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from store.events import Event
from store.launches import Launch

__all__ = ["LaunchResult", "unwrap_error"]


@dataclass(frozen=True)
class LaunchResult:
    """How a launch ended, with the warnings the role wrote."""

    launch: Launch
    warnings: list[Event] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """``{"id", "status", "exit_code", "reason", "error", "provider", "warnings": [...], ...}``."""
        return {
            "id": self.launch.id,
            "status": str(self.launch.status),
            "exit_code": self.launch.exit_code,
            "reason": self.launch.reason,
            "error": self.launch.error,
            "provider": self.launch.provider,
            "proposal_id": self.launch.proposal_id,
            "usage": self.launch.usage,
            "warnings": [event.to_dict() for event in self.warnings],
        }


def unwrap_error(exc: BaseException) -> BaseException:
    """The error inside the exception groups that task groups (the socket server's) wrap it in."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc
