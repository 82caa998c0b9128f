"""Durable project memory: entries, search, revisions, links and merges, curation.

:class:`MemoryStore` backs the MCP memory tools; :class:`MemoryAdmin` the HTTP API and console.
"""

from __future__ import annotations

from store.memory._actions import ACTIONS, Synthesizer, lexical_resynthesis
from store.memory._admin import MemoryAdmin
from store.memory._store import MemoryEntry, MemoryStore, entry_from_row

__all__ = [
    "ACTIONS",
    "MemoryAdmin",
    "MemoryEntry",
    "MemoryStore",
    "Synthesizer",
    "entry_from_row",
    "lexical_resynthesis",
]
