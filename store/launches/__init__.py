"""Role launch records: their statuses, the allowed moves, and each move's ``role.*`` event."""

from __future__ import annotations

from store.launches._records import PROVIDER_FAILED, PROVIDER_FAILED_EXIT
from store.launches._store import MAX_LOG_TAIL_BYTES, Launch, LaunchStatus, LaunchStore, bounded_tail

__all__ = [
    "MAX_LOG_TAIL_BYTES",
    "PROVIDER_FAILED",
    "PROVIDER_FAILED_EXIT",
    "Launch",
    "LaunchStatus",
    "LaunchStore",
    "bounded_tail",
]
