"""Role launch records: their statuses, the allowed moves, and each move's ``role.*`` event."""

from __future__ import annotations

from store.launches._records import NO_GRANT_EXIT, PROPOSAL_CLOSED, PROVIDER_FAILED, PROVIDER_FAILED_EXIT
from store.launches._store import MAX_LOG_TAIL_BYTES, Launch, LaunchStatus, LaunchStore, bounded_tail

__all__ = [
    "MAX_LOG_TAIL_BYTES",
    "NO_GRANT_EXIT",
    "PROPOSAL_CLOSED",
    "PROVIDER_FAILED",
    "PROVIDER_FAILED_EXIT",
    "Launch",
    "LaunchStatus",
    "LaunchStore",
    "bounded_tail",
]
