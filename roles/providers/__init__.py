"""Providers drive a role's tools: ``lexical`` (an embedded heuristic, no model) and ``openai``
(any OpenAI-compatible chat-completions server, reached through the supervisor)."""

from __future__ import annotations

from roles.providers.base import ProviderReport

__all__ = ["PROVIDER_NAMES", "ProviderReport"]

PROVIDER_NAMES = ("judge", "lexical", "openai")
