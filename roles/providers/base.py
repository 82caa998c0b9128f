"""What every provider reports when it finishes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["ProviderReport"]


@dataclass
class ProviderReport:
    """The outcome of one provider run, printed by the runner as one JSON line."""

    provider: str
    summary_memory_id: str | None = None
    warnings: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape."""
        return {
            "provider": self.provider,
            "summary_memory_id": self.summary_memory_id,
            "warnings": self.warnings,
            "notes": self.notes,
        }
