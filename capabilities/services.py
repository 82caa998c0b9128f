"""The services a tool handler works with: the open store and its configuration.

One :class:`Services` object is shared by every transport of a process, so the same tool call
behaves the same on stdio, HTTP, a launch socket and the CLI.
"""

from __future__ import annotations

from dataclasses import dataclass

from store import Store

__all__ = ["Services"]


@dataclass
class Services:
    """Everything tool handlers need."""

    store: Store
