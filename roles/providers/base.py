"""What every provider reports when it finishes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from roles.tools import ToolCaller

__all__ = ["ProviderReport", "record_summary"]


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


async def record_summary(tools: ToolCaller, history: dict[str, Any], body_md: str) -> str:
    """Record the run's task-scoped ``summary`` entry (below a decision's default importance, and
    sourced at the history's newest event); its memory ID."""
    events = history.get("events", [])
    summary = await tools.call(
        "memory.record",
        {
            "scope": str(history["task"]["id"]),
            "kind": "summary",
            "title": f"MemoryOracle summary for {history['proposal']['id']}",
            "body_md": body_md,
            "source_event_id": int(events[0]["id"]) if events else 0,
            "importance": 40,
        },
    )
    return str(summary["entry"]["id"])
