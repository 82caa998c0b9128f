"""How a launch's end is read, whatever ran it: the status its exit means, and its redacted log tail."""

from __future__ import annotations

from collections.abc import Collection

from store.launches import LaunchStatus, bounded_tail

__all__ = ["REDACTED", "end_status", "redacted_tail", "tail_margin"]

REDACTED = "[redacted]"


def end_status(*, timed_out: bool, oom: bool, exit_code: int | None) -> tuple[LaunchStatus, str | None]:
    """The recorded status and reason: ``timeout`` past the deadline, ``failed`` (``oom``,
    ``nonzero_exit``), else ``exited``."""
    if timed_out:
        return LaunchStatus.TIMEOUT, "deadline_exceeded"
    if oom:
        return LaunchStatus.FAILED, "oom"
    if exit_code == 0:
        return LaunchStatus.EXITED, None
    return LaunchStatus.FAILED, "nonzero_exit"


def tail_margin(redact: Collection[str]) -> int:
    """How many bytes more than it keeps a launcher reads, so a secret cut at the edge is still whole."""
    return max((len(secret.encode()) for secret in redact), default=0)


def redacted_tail(raw: bytes, redact: Collection[str], log_bytes: int) -> str:
    """The last ``log_bytes`` of ``raw`` as text, every string of ``redact`` cut out first."""
    text = raw.decode("utf-8", errors="replace")
    for secret in sorted(redact, key=len, reverse=True):
        if secret:
            text = text.replace(secret, REDACTED)
    return bounded_tail(text, log_bytes)
