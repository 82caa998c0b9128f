"""The grant type :class:`GrantRecord`, and the checks and revocations done in a caller's transaction.

Other stores check and revoke grants inside their own write transaction, so a change and the grant
state it depends on commit together: :func:`require_live_grant` re-reads a grant before a write made
on its behalf, and :func:`revoke_in`, :func:`revoke_for_proposal_in` and :func:`revoke_for_launch_in`
revoke grants when a proposal leaves review or a launch ends, each revocation with its
``capability.revoked`` event. :class:`store.access._grants.GrantStore` uses the same functions for its own
one-transaction calls.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from store._ids import utc_now
from store._rows import as_dict, fetch_row, from_row
from store.access._tokens import parse_time, stamp_time
from store.errors import NotFound, Unauthenticated
from store.events import append_event

__all__ = [
    "GrantRecord",
    "grant_from_row",
    "load_grant",
    "require_live_grant",
    "revoke_for_launch_in",
    "revoke_for_proposal_in",
    "revoke_in",
]


@dataclass(frozen=True)
class GrantRecord:
    """One capability grant: the one grant type, from its row to the principal and the oracle's store.

    Minting and authentication return it; the principal of a capability call carries it
    (``Principal.grant``), and the stores that act for a grant (the oracle's, memory writes) take it
    as it is. Its fields are the ``capability_grants`` columns but for the token hash, which never
    leaves the table.
    """

    id: str
    role: str
    agent_id: str
    proposal_id: str
    task_id: str
    scopes: frozenset[str]
    tools: frozenset[str]
    launch_id: str | None
    created_by: str
    created_at: str
    expires_at: str
    revoked_at: str | None
    revoked_reason: str | None

    def is_expired(self, now: datetime | None = None) -> bool:
        """Whether the grant's expiry has passed."""
        return parse_time(self.expires_at) <= (now or utc_now())

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape shown to operators (never the token): scopes and tools as sorted lists."""
        return {**as_dict(self), "scopes": sorted(self.scopes), "tools": sorted(self.tools)}


def grant_from_row(row: sqlite3.Row) -> GrantRecord:
    """The :class:`GrantRecord` a ``capability_grants`` row holds."""
    return from_row(
        GrantRecord,
        row,
        scopes=frozenset(json.loads(row["scopes"])),
        tools=frozenset(json.loads(row["tools"])),
    )


def load_grant(conn: sqlite3.Connection, grant_id: str) -> GrantRecord:
    """The grant ``grant_id``, read in the caller's transaction, or :class:`NotFound`."""
    return grant_from_row(fetch_row(conn, "capability_grants", "capability grant", grant_id))


def require_live_grant(
    conn: sqlite3.Connection, grant_id: str, *, now: datetime | None = None
) -> GrantRecord:
    """The grant, re-read inside the caller's transaction; :class:`Unauthenticated` unless live.

    Writes made on behalf of a capability call this in their own transaction, so a revocation
    that lands between authentication and the write still stops the write.
    """
    try:
        grant = load_grant(conn, grant_id)
    except NotFound:
        raise Unauthenticated("the capability is not known") from None
    if grant.revoked_at is not None:
        raise Unauthenticated("the credential has been revoked")
    if grant.is_expired(now):
        raise Unauthenticated("the credential has expired")
    return grant


def revoke_in(
    conn: sqlite3.Connection, grant_id: str, *, actor: str, reason: str
) -> tuple[GrantRecord, bool]:
    """Revoke one grant inside the caller's write transaction.

    Returns the grant and whether this call revoked it (``False`` when it already was).
    """
    if (current := load_grant(conn, grant_id)).revoked_at is not None:
        return current, False
    now = stamp_time(utc_now())
    conn.execute(
        "UPDATE capability_grants SET revoked_at = ?, revoked_reason = ? WHERE id = ? AND revoked_at IS NULL",
        (now, reason, grant_id),
    )
    grant = load_grant(conn, grant_id)
    append_event(
        conn,
        "capability.revoked",
        actor=actor,
        task_id=grant.task_id,
        proposal_id=grant.proposal_id,
        payload={
            "grant_id": grant.id,
            "role": grant.role,
            "agent_id": grant.agent_id,
            "launch_id": grant.launch_id,
            "reason": reason,
        },
    )
    return grant, True


def _revoke_where(
    conn: sqlite3.Connection, where: str, params: tuple[Any, ...], *, actor: str, reason: str
) -> list[GrantRecord]:
    """Revoke every live grant matching the SQL condition ``where``, in ID order."""
    ids = [
        row["id"]
        for row in conn.execute(
            f"SELECT id FROM capability_grants WHERE revoked_at IS NULL AND ({where}) ORDER BY id", params
        )
    ]
    return [revoke_in(conn, grant_id, actor=actor, reason=reason)[0] for grant_id in ids]


def revoke_for_proposal_in(
    conn: sqlite3.Connection, proposal_id: str, *, actor: str, reason: str
) -> list[GrantRecord]:
    """Revoke every live grant on ``proposal_id`` (call it when the proposal leaves review)."""
    return _revoke_where(conn, "proposal_id = ?", (proposal_id,), actor=actor, reason=reason)


def revoke_for_launch_in(
    conn: sqlite3.Connection, launch_id: str, *, actor: str, reason: str
) -> list[GrantRecord]:
    """Revoke every live grant of ``launch_id`` (call it when the launch ends, for any reason)."""
    return _revoke_where(conn, "launch_id = ?", (launch_id,), actor=actor, reason=reason)
