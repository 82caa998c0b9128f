"""Supervisor leases: which supervisor processes sharing a store are alive (``supervisor_leases``).

When supervisors on several hosts share one store, launch ownership is a lease in the database:
a supervisor :meth:`~LeaseStore.acquire`\\ s a row at start, :meth:`~LeaseStore.renew`\\ s it every
heartbeat and :meth:`~LeaseStore.release`\\ s it when it stops cleanly. An owner whose lease has
expired is dead: :meth:`~LeaseStore.reap_expired` fails its active launches (``role.failed``,
reason ``owner_lease_expired``), revokes their grants and deletes the lease, in one transaction.

Every time is seconds since the epoch read from the **database's clock** in the statement that
uses it (``clock_timestamp()`` on PostgreSQL, ``julianday('now')`` on SQLite), never a host's, so
hosts whose clocks disagree still agree on which leases expired. The SQL is written once for both
backends but for that one expression.

Renewal and reaping are writes, and writes of one project take turns (SQLite's write lock,
PostgreSQL's project advisory lock), so they are ordered: a lease is either renewed before a reaper
looks (and its launches are left alone) or found expired (and a later renewal is refused with
:class:`LeaseLost`). An expired lease is never revived: its launches may already be failed and
their grants revoked, so the supervisor that held it must stop claiming them.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from store._rows import from_row
from store._text import check_label
from store.access import revoke_for_launch_in
from store.errors import Conflict, InvalidArgument
from store.launches._records import ACTIVE_STATUSES, Launch
from store.launches._store import LaunchStore

__all__ = ["LEASE_EXPIRED", "Lease", "LeaseLost", "LeaseStore", "Orphan", "Reaped"]

LEASE_EXPIRED = "owner_lease_expired"
"""The reason of a launch failed because its owner's lease expired."""

_ACTOR = "supervisor"
_MAX_TTL = 3600.0


class LeaseLost(Conflict):
    """The lease expired (or was reaped) before it was renewed: its owner no longer owns anything
    (code ``conflict``: the state moved on without it)."""


@dataclass(frozen=True)
class Lease:
    """One supervisor's lease; times are seconds since the epoch on the database's clock."""

    owner: str
    host: str
    engine: str
    ttl_seconds: float
    acquired_at: float
    heartbeat_at: float
    expires_at: float


@dataclass(frozen=True)
class Orphan:
    """A launch failed because its owner's lease expired, and the Docker engine it ran on."""

    launch: Launch
    engine: str
    """The engine ID of the owner's lease ("" when unknown: the owner had no lease row)."""
    revoked_grants: tuple[str, ...]


@dataclass(frozen=True)
class Reaped:
    """What :meth:`LeaseStore.reap_expired` did: the launches it failed, the expired leases it deleted."""

    orphans: tuple[Orphan, ...]
    expired: tuple[Lease, ...]


def _now(conn: Any) -> str:
    """The database clock as seconds since the epoch, in this connection's dialect."""
    if getattr(conn, "backend", "sqlite") == "postgresql":
        return "extract(epoch FROM clock_timestamp())::double precision"
    return "((julianday('now') - 2440587.5) * 86400.0)"


def _check_ttl(ttl_seconds: float) -> float:
    if isinstance(ttl_seconds, bool) or not isinstance(ttl_seconds, int | float):
        raise InvalidArgument("ttl_seconds must be a number")
    if not 0 < ttl_seconds <= _MAX_TTL:
        raise InvalidArgument(f"ttl_seconds must be in (0, {_MAX_TTL:g}]")
    return float(ttl_seconds)


class LeaseStore:
    """Acquires, renews, releases and reaps supervisor leases (module docstring)."""

    def __init__(self, launches: LaunchStore):
        self.launches = launches
        self.db = launches.db
        self._ended: dict[str, str] = {}  # owners this process ended early (expire), and why

    def _get(self, conn: sqlite3.Connection, owner: str) -> Lease | None:
        row = conn.execute("SELECT * FROM supervisor_leases WHERE owner = ?", (owner,)).fetchone()
        return None if row is None else from_row(Lease, row)

    def acquire(self, owner: str, *, host: str, engine: str, ttl_seconds: float) -> Lease:
        """Create ``owner``'s lease, expiring ``ttl_seconds`` from now (``conflict`` if it exists)."""
        fields = {
            "owner": check_label("owner", owner),
            "host": check_label("host", host),
            "engine": check_label("engine", engine) if engine else "",
            "ttl": _check_ttl(ttl_seconds),
        }

        def write(conn: sqlite3.Connection) -> Lease:
            if self._get(conn, owner) is not None:
                raise Conflict(f"supervisor {owner} already holds a lease")
            now = _now(conn)
            conn.execute(
                "INSERT INTO supervisor_leases"
                " (owner, host, engine, ttl_seconds, acquired_at, heartbeat_at, expires_at)"
                f" VALUES (:owner, :host, :engine, :ttl, {now}, {now}, {now} + :ttl)",
                fields,
            )
            lease = self._get(conn, owner)
            assert lease is not None
            return lease

        return self.db.write(write)

    def renew(self, owner: str) -> Lease:
        """Push ``owner``'s expiry ``ttl_seconds`` past now; :class:`LeaseLost` if it already expired."""

        def write(conn: sqlite3.Connection) -> Lease:
            now = _now(conn)
            updated = conn.execute(
                f"UPDATE supervisor_leases SET heartbeat_at = {now}, expires_at = {now} + ttl_seconds"
                f" WHERE owner = ? AND expires_at > {now}",
                (owner,),
            ).rowcount
            lease = self._get(conn, owner)
            if not updated or lease is None:
                raise LeaseLost(f"the lease of supervisor {owner} expired; its launches are not its own")
            return lease

        return self.db.write(write)

    def release(self, owner: str) -> bool:
        """Delete ``owner``'s lease (a clean stop); False when there was none."""
        return bool(
            self.db.write(
                lambda conn: conn.execute("DELETE FROM supervisor_leases WHERE owner = ?", (owner,)).rowcount
            )
        )

    def live(self, owners: Collection[str]) -> set[str]:
        """The names among ``owners`` whose lease has not expired."""
        names = sorted(set(owners))
        if not names:
            return set()

        def read(conn: sqlite3.Connection) -> set[str]:
            marks = ",".join("?" * len(names))
            rows = conn.execute(
                f"SELECT owner FROM supervisor_leases WHERE owner IN ({marks}) AND expires_at > {_now(conn)}",
                names,
            ).fetchall()
            return {str(row[0]) for row in rows}

        return self.db.read(read)

    def expire(self, owners: Collection[str], *, reason: str = "supervisor_restarted") -> set[str]:
        """End the leases of ``owners`` now (their owners are known dead); returns those it ended.
        Their launches are then the reaper's, as if the leases had run out, and when this store's
        :meth:`reap_expired` fails them it gives ``reason`` (a supervisor found dead on its own
        machine was restarted, exactly as on SQLite), not ``owner_lease_expired``."""
        names = sorted(set(owners))
        if not names:
            return set()

        def write(conn: sqlite3.Connection) -> set[str]:
            now, marks = _now(conn), ",".join("?" * len(names))
            live = f"owner IN ({marks}) AND expires_at > {now}"
            ended = {
                str(row[0])
                for row in conn.execute(f"SELECT owner FROM supervisor_leases WHERE {live}", names)
            }
            conn.execute(f"UPDATE supervisor_leases SET expires_at = {now} WHERE {live}", names)
            return ended

        ended = self.db.write(write)
        self._ended.update(dict.fromkeys(ended, check_label("reason", reason)))
        return ended

    def leases(self) -> list[Lease]:
        """Every lease row, live or expired, by owner."""
        return self.db.read(
            lambda conn: [
                from_row(Lease, row)
                for row in conn.execute("SELECT * FROM supervisor_leases ORDER BY owner").fetchall()
            ]
        )

    def reap_expired(self, *, reason: str = LEASE_EXPIRED, keep: Collection[str] = ()) -> Reaped:
        """Fail every active launch whose owner holds no live lease, revoke its grants, and delete the
        expired leases, in one transaction. ``keep`` names owners never reaped whatever their lease
        says (the caller itself). For stores whose supervisors all hold leases: a launch whose owner
        has no lease row (an ``flock`` owner's, on one machine) counts as orphaned."""
        kept = set(keep)

        def write(conn: sqlite3.Connection) -> Reaped:
            now = _now(conn)
            marks = ",".join("?" * len(ACTIVE_STATUSES))
            rows = conn.execute(
                "SELECT r.id, r.owner, l.engine FROM role_launches r"
                " LEFT JOIN supervisor_leases l ON l.owner = r.owner"
                f" WHERE r.status IN ({marks}) AND (l.owner IS NULL OR l.expires_at <= {now})"
                " ORDER BY r.requested_at, r.id",
                [str(s) for s in ACTIVE_STATUSES],
            ).fetchall()
            orphans: list[Orphan] = []
            for row in rows:
                if row["owner"] in kept:
                    continue
                why = self._ended.get(row["owner"], reason)
                launch = self.launches.fail_in(conn, row["id"], why)
                grants = revoke_for_launch_in(conn, launch.id, actor=_ACTOR, reason=why)
                orphans.append(Orphan(launch, str(row["engine"] or ""), tuple(g.id for g in grants)))
            expired = [
                from_row(Lease, row)
                for row in conn.execute(
                    f"SELECT * FROM supervisor_leases WHERE expires_at <= {now} ORDER BY owner"
                ).fetchall()
                if row["owner"] not in kept
            ]
            for lease in expired:
                conn.execute("DELETE FROM supervisor_leases WHERE owner = ?", (lease.owner,))
            return Reaped(tuple(orphans), tuple(expired))

        reaped = self.db.write(write)
        for lease in reaped.expired:
            self._ended.pop(lease.owner, None)
        return reaped
