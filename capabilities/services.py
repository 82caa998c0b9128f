"""The services a tool handler works with: the open store and its configuration.

One :class:`Services` object is shared by every transport of a process, so the same tool call
behaves the same on stdio, HTTP, a launch socket and the CLI.
"""

from __future__ import annotations

from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any, Protocol

from store import Store

__all__ = ["ReviewRunner", "Services"]


class ReviewRunner(Protocol):
    """Runs a review round of a proposal and answers its outcome when every launch has ended.

    The supervisor provides it (``roundtable serve``, ``roundtable mcp stdio``); capabilities
    cannot import the supervisor, so it is handed in here.
    """

    def __call__(self, proposal_id: str, *, actor: str) -> Awaitable[dict[str, Any]]:
        """Run the round of ``proposal_id`` on behalf of ``actor``."""
        ...


@dataclass
class Services:
    """Everything tool handlers need."""

    store: Store
    review_runner: ReviewRunner | None = None
    """What runs review rounds in this process (``None``: this process launches no containers)."""
