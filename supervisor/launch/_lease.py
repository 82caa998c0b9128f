"""Launch ownership across hosts: a lease in the shared store, renewed by a heartbeat.

On a PostgreSQL store, supervisors on several hosts share one record of launches, and an ``flock``
proves nothing across machines. There, a :class:`~supervisor.supervisor.Supervisor` holds an
:class:`OwnerLease` instead of an :class:`~supervisor.launch.OwnerLock`: a row in
``supervisor_leases`` (:class:`store.launches.LeaseStore`) naming the owner, its host and its Docker
engine, expiring ``[supervisor] lease_ttl_seconds`` after its last heartbeat on the database's
clock. Its launches are recorded with the lease's name as their ``owner``.

The heartbeat runs in a daemon thread (every ttl/4), not in an async task: ``start`` and ``aclose``
of one supervisor may run in different tasks (``ReviewService`` starts it lazily), so no task group
spans its life, and a thread keeps renewing while the event loop is busy.

A supervisor stops claiming ownership as soon as it cannot prove it: :attr:`OwnerLease.valid` turns
false once a ttl has passed since the start of the last renewal that succeeded (the store may be
unreachable), or for good when the store refuses a renewal (:class:`~store.launches.LeaseLost`: the
lease expired and others may have reaped its launches). :meth:`OwnerLease.check` then refuses new
launches; an expired lease is never revived, so the supervisor must be restarted to launch again.
"""

from __future__ import annotations

import os
import re
import secrets
import socket
import threading
import time
from collections.abc import Collection
from typing import TYPE_CHECKING

import structlog

from store.errors import RoundtableError
from store.launches import LeaseLost, LeaseStore

if TYPE_CHECKING:
    from supervisor.launch._ownership import OwnerLock

__all__ = ["OwnerLease"]

_log = structlog.get_logger("roundtable.lease")


class OwnerLease:
    """The lease one supervisor instance holds for its whole life (module docstring)."""

    def __init__(
        self,
        leases: LeaseStore,
        *,
        ttl_seconds: float,
        host: str | None = None,
        local: OwnerLock | None = None,
    ):
        """``local``, when given, is a lock of the same name held beside the lease: a supervisor on this
        machine that finds a peer's lock file left unheld knows that peer died, and need not wait
        for its lease to expire (:meth:`live`)."""
        self.leases = leases
        self.local = local
        self.ttl = float(ttl_seconds)
        self.interval = self.ttl / 4
        # A label, as the store takes it: anything else in a host name becomes '-'.
        self.host = re.sub(r"[^A-Za-z0-9._:-]", "-", host or socket.gethostname() or "unknown")[:120]
        self.host = self.host if self.host[:1].isalnum() else f"h{self.host}"
        self.engine = ""
        """The Docker engine ID the owner's containers run on; set before :meth:`acquire`."""
        self.name = local.name if local is not None else f"{os.getpid()}-{secrets.token_hex(4)}"
        self._renewed_at: float | None = None  # monotonic start of the last renewal that succeeded
        self._lost = False
        self._held = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def valid(self) -> bool:
        """Whether this supervisor can still claim its launches (module docstring)."""
        renewed = self._renewed_at
        return not self._lost and renewed is not None and time.monotonic() - renewed < self.ttl

    def check(self) -> None:
        """Raise :class:`LeaseLost` when the lease lapsed or was lost while held (call it before a
        launch). Before :meth:`acquire` and after :meth:`release` it says nothing, as a lock that is
        not held says nothing: the supervisor is not started, and claims no launch."""
        if self._held and not self.valid:
            raise LeaseLost(
                f"supervisor {self.name} could not renew its lease within {self.ttl:g}s; other supervisors"
                " may have reaped its launches, so it starts none: restart it"
            )

    def acquire(self) -> None:
        """Create the lease row and start the heartbeat (the owner is alive from here on)."""
        started = time.monotonic()
        if self.local is not None:
            self.local.acquire()
        try:
            self.leases.acquire(self.name, host=self.host, engine=self.engine, ttl_seconds=self.ttl)
        except BaseException:
            if self.local is not None:
                self.local.release()
            raise
        self._renewed_at = started
        self._held = True
        self._stop.clear()
        self._thread = threading.Thread(target=self._beat, name=f"lease-{self.name}", daemon=True)
        self._thread.start()

    def _beat(self) -> None:
        while not self._stop.wait(self.interval):
            started = time.monotonic()
            try:
                self.leases.renew(self.name)
            except LeaseLost as exc:
                self._lost = True
                _log.error("lease_lost", owner=self.name, detail=exc.message)
                return
            except RoundtableError as exc:  # the store did not answer: try again at the next beat
                _log.warning("lease_renewal_failed", owner=self.name, error=exc.message, valid=self.valid)
                continue
            self._renewed_at = started

    def release(self) -> None:
        """Stop the heartbeat and delete the lease (a clean stop: nothing of ours is left to reap)."""
        self._stop.set()
        self._held = False
        if self._thread is not None:
            self._thread.join(timeout=self.ttl)
            self._thread = None
        if self._renewed_at is None:
            return
        self._renewed_at = None
        try:
            self.leases.release(self.name)
        except RoundtableError as exc:  # it expires on its own
            _log.warning("lease_release_failed", owner=self.name, error=exc.message)
        finally:
            if self.local is not None:
                self.local.release()

    def live(self, names: Collection[str]) -> set[str]:
        """The owners among ``names`` whose lease has not expired, less those proven dead on this
        machine (their lock file left unheld: see ``local``), whose leases are expired now so that
        the reaper takes their launches at once."""
        alive = self.leases.live(names)
        dead = self.local.dead(alive - {self.name}) if self.local is not None else set()
        if dead:
            self.leases.expire(dead)
            _log.info("dead_local_owners_expired", owners=sorted(dead))
        return alive - dead
