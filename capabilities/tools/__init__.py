"""Tool bodies, one module per area. :func:`all_tools` is the registry every server uses."""

from __future__ import annotations

from capabilities.registry import ToolRegistry, ToolSpec
from capabilities.tools import memory, oracle, proposals, tasks, votes

__all__ = ["all_tools", "build_registry"]


def all_tools() -> list[ToolSpec]:
    """Every tool Roundtable implements."""
    return [*memory.TOOLS, *tasks.TOOLS, *proposals.TOOLS, *votes.TOOLS, *oracle.TOOLS]


def build_registry() -> ToolRegistry:
    """A registry holding :func:`all_tools`."""
    return ToolRegistry(all_tools())
