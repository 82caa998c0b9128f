"""Tool bodies, one module per area. :func:`all_tools` is the registry every server uses."""

from __future__ import annotations

from capabilities.mcp._registry import ToolRegistry, ToolSpec
from capabilities.mcp.tools import _feedback, _memory, _oracle, _proposals, _review_runs, _tasks, _votes

__all__ = ["all_tools", "build_registry"]


def all_tools() -> list[ToolSpec]:
    """Every tool Roundtable implements."""
    return [
        *_memory.TOOLS,
        *_tasks.TOOLS,
        *_proposals.TOOLS,
        *_votes.TOOLS,
        *_review_runs.TOOLS,
        *_oracle.TOOLS,
        *_feedback.TOOLS,
    ]


def build_registry() -> ToolRegistry:
    """A registry holding :func:`all_tools`."""
    return ToolRegistry(all_tools())
