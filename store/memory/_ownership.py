"""Who wrote a memory entry, and who may therefore replace it.

Every entry records its writer in ``memory_entries.written_by``, taken from the credential the
write came through and never from an argument (``source_proposal_id`` is a caller-settable field
of ``POST /memories``, so it can decide nothing):

- ``operator:<name>``: the local operator or an operator token. Operators are **curators**: they
  may replace any entry and set its lifecycle state (active, stale, archived, merged);
- ``agent:<agent id>``: a roster agent's token (or ``mcp stdio --agent``);
- ``grant:<C-id>``: a launched role's capability grant.

A writer that is not a curator may replace only entries it wrote itself (a capability: entries any
grant of the *same proposal* wrote, so a relaunched oracle keeps its predecessor's notes), and never
changes an entry's lifecycle state. Entries written before writers were recorded have none, so only
curators may replace them.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

__all__ = ["MemoryWriter", "writer_owns"]

_GRANT = "grant:"


@dataclass(frozen=True)
class MemoryWriter:
    """The writer of a memory change, as its verified credential says."""

    key: str
    """What ``written_by`` stores: ``operator:<name>``, ``agent:<id>`` or ``grant:<C-id>``."""
    curator: bool
    """Whether it may replace anyone's entries and set lifecycle state (operators only)."""

    @classmethod
    def operator(cls, name: str) -> MemoryWriter:
        """An operator (local, or an operator token)."""
        return cls(f"operator:{name}", curator=True)

    @classmethod
    def agent(cls, agent_id: str) -> MemoryWriter:
        """A roster agent acting through its own credential."""
        return cls(f"agent:{agent_id}", curator=False)

    @classmethod
    def grant(cls, grant_id: str) -> MemoryWriter:
        """A launched role, through its capability grant."""
        return cls(f"{_GRANT}{grant_id}", curator=False)


def writer_owns(conn: sqlite3.Connection, written_by: str | None, writer: MemoryWriter) -> bool:
    """Whether ``writer`` may replace an entry that ``written_by`` wrote (see the module docstring)."""
    if writer.curator:
        return True
    if written_by is None:
        return False
    if written_by == writer.key:
        return True
    if not (written_by.startswith(_GRANT) and writer.key.startswith(_GRANT)):
        return False
    # Two grants own the same entries when they are bound to the same proposal.
    grants, proposals = conn.execute(
        "SELECT COUNT(*), COUNT(DISTINCT proposal_id) FROM capability_grants WHERE id IN (?, ?)",
        (written_by.removeprefix(_GRANT), writer.key.removeprefix(_GRANT)),
    ).fetchone()
    return bool(grants == 2 and proposals == 1)
