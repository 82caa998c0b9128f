"""Role launch records: their statuses, the allowed moves, each move's ``role.*`` event, and the
supervisors' leases that say who owns an active launch when several hosts share the store."""

from __future__ import annotations

from store.launches._leases import LEASE_EXPIRED, Lease, LeaseLost, LeaseStore, Orphan, Reaped
from store.launches._records import NO_GRANT_EXIT, PROPOSAL_CLOSED, PROVIDER_FAILED, PROVIDER_FAILED_EXIT
from store.launches._store import MAX_LOG_TAIL_BYTES, Launch, LaunchStatus, LaunchStore, bounded_tail

__all__ = [
    "LEASE_EXPIRED",
    "MAX_LOG_TAIL_BYTES",
    "NO_GRANT_EXIT",
    "PROPOSAL_CLOSED",
    "PROVIDER_FAILED",
    "PROVIDER_FAILED_EXIT",
    "Launch",
    "LaunchStatus",
    "LaunchStore",
    "Lease",
    "LeaseLost",
    "LeaseStore",
    "Orphan",
    "Reaped",
    "bounded_tail",
]
