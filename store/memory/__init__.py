"""Durable project memory: entries, search, revisions, links and merges, curation.

:class:`MemoryStore` backs the MCP memory tools; :class:`MemoryAdmin` the HTTP API and console.
Every new entry, whichever surface creates it, is a :class:`NewEntry` checked by one validator
under its caller's :class:`EntryContract` and written by one insert.
"""

from __future__ import annotations

from store.memory._actions import ACTIONS, Synthesizer, lexical_resynthesis
from store.memory._admin import MemoryAdmin
from store.memory._entry import ENTRY_COLUMNS, MemoryEntry, core_from_values, entry_from_row
from store.memory._new_entry import HTTP_CREATE, RECORD, EntryContract, NewEntry
from store.memory._ownership import MemoryWriter
from store.memory._store import MemoryStore

__all__ = [
    "ACTIONS",
    "ENTRY_COLUMNS",
    "HTTP_CREATE",
    "RECORD",
    "EntryContract",
    "MemoryAdmin",
    "MemoryEntry",
    "MemoryStore",
    "MemoryWriter",
    "NewEntry",
    "Synthesizer",
    "core_from_values",
    "entry_from_row",
    "lexical_resynthesis",
]
