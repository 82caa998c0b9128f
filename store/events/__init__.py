"""The append-only event log, read forward by feeds; the audit log; idempotent mutations.

Every state change appends its event (:func:`append_event`) in the transaction of the change.
"""

from __future__ import annotations

from store.events._audit import append_audit
from store.events._feed import EventFeed
from store.events._idempotency import Committed, IdempotencyClaim, commit
from store.events._log import (
    LOCAL_CREDENTIAL,
    Event,
    acting_credential,
    append_event,
    current_credential,
    event_from_row,
    list_events,
)

__all__ = [
    "LOCAL_CREDENTIAL",
    "Committed",
    "Event",
    "EventFeed",
    "IdempotencyClaim",
    "acting_credential",
    "append_audit",
    "append_event",
    "commit",
    "current_credential",
    "event_from_row",
    "list_events",
]
