"""Tool bodies, one module per area. :func:`build_registry` is the registry every server uses.

:data:`TOOL_MODULES` names every tool and the module that defines it, so a registry knows every
tool (an unknown name is ``not_found``, a known one the caller may not call ``forbidden``) while
importing only the modules of the tools it is asked for: a launch's socket serving the oracle's six
tools imports their two modules, not the seven (tests/capabilities/mcp/test_lazy_registry.py).
"""

from __future__ import annotations

import importlib
from types import MappingProxyType
from typing import Final

from capabilities.mcp._registry import ToolRegistry, ToolSpec

__all__ = ["TOOL_MODULES", "all_tools", "build_registry"]


TOOL_MODULES: Final = MappingProxyType(
    {
        f"{__name__}.{area}": tools
        for area, tools in {
            "_memory": ("memory.query", "memory.record", "memory.summarize", "memory.mark_stale"),
            "_tasks": ("task.create", "task.get", "task.list"),
            "_proposals": (
                "proposal.create",
                "proposal.attach_patch",
                "proposal.get",
                "proposal.list",
                "proposal.request_review",
                "proposal.timeline",
            ),
            "_votes": (
                "vote.cast",
                "vote.list",
                "decision.record",
                "patch.reject",
                "patch.validate",
                "patch.apply",
            ),
            "_review_runs": ("review.run",),
            "_oracle": ("task.history", "patch.inspect", "oracle.warn"),
            "_feedback": ("oracle.feedback", "oracle.stats"),
        }.items()
    }
)
"""Every tool module and the tools its ``TOOLS`` list defines, in that order (a test holds each
module to its entry)."""

_CATALOG: Final = MappingProxyType({tool: module for module, tools in TOOL_MODULES.items() for tool in tools})


def all_tools() -> list[ToolSpec]:
    """Every tool Roundtable implements (every tool module imported)."""
    specs: list[ToolSpec] = []
    for module in TOOL_MODULES:
        specs.extend(importlib.import_module(module).TOOLS)
    return specs


def build_registry() -> ToolRegistry:
    """A registry of every tool Roundtable implements (:func:`all_tools`), each tool's module
    imported when one of its tools is first looked up (:meth:`ToolRegistry.lazy`)."""
    return ToolRegistry.lazy(_CATALOG)
