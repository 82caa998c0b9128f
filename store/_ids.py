"""Identifiers: a prefix, a UTC timestamp and a random suffix.

``M-20261129T225700123456Z-3f9a1c`` sorts by creation time and stays unique under concurrency
(the suffix carries 48 random bits), across processes as well as threads.
"""

from __future__ import annotations

import secrets
from datetime import UTC, datetime

__all__ = ["PREFIXES", "new_id", "utc_now", "utc_now_iso"]

PREFIXES = {
    "task": "T",
    "proposal": "P",
    "vote": "V",
    "decision": "D",
    "memory": "M",
    "grant": "C",
    "launch": "L",
    "round": "R",
    "token": "K",
}


def utc_now() -> datetime:
    """The current time, timezone-aware UTC."""
    return datetime.now(UTC)


def utc_now_iso() -> str:
    """The current time as RFC 3339 UTC with microseconds, e.g. ``2026-11-29T22:57:00.123456Z``."""
    return utc_now().strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def new_id(kind: str) -> str:
    """A fresh ID for an object of ``kind`` (a key of :data:`PREFIXES`, or a literal prefix)."""
    prefix = PREFIXES.get(kind, kind)
    stamp = utc_now().strftime("%Y%m%dT%H%M%S%fZ")
    return f"{prefix}-{stamp}-{secrets.token_hex(6)}"
