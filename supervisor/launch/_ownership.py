"""Which supervisor process owns a launch, decided by a lock the owner holds while it lives.

Each :class:`~supervisor.supervisor.Supervisor` takes an exclusive ``flock`` on a file of its own
under the runtime root for as long as it runs, and records that file's name as the ``owner`` of
every launch it starts. Another supervisor of the same project (``roundtable serve`` beside a CLI
``oracle launch``) reaps a launch only when its owner's lock can be taken: the kernel releases a
lock when its process dies, however it dies, so a lock that is still held means a live owner.
"""

from __future__ import annotations

import fcntl
import os
import re
import secrets
from collections.abc import Iterable
from pathlib import Path

__all__ = ["OwnerLock", "live_owners"]

_NAME = re.compile(r"[0-9]+-[0-9a-f]{8}")


class OwnerLock:
    """The lock one supervisor instance holds for its whole life."""

    def __init__(self, directory: Path):
        self.directory = directory
        self.name = f"{os.getpid()}-{secrets.token_hex(4)}"
        self._fd: int | None = None

    @property
    def path(self) -> Path:
        """The lock file."""
        return self.directory / f"{self.name}.lock"

    def acquire(self) -> None:
        """Create the lock file and lock it (the owner is alive from here on)."""
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        self._fd = fd

    def release(self) -> None:
        """Unlock and remove the lock file."""
        if self._fd is None:
            return
        try:
            self.path.unlink(missing_ok=True)
        finally:
            os.close(self._fd)  # closing releases the lock
            self._fd = None


def live_owners(directory: Path, names: Iterable[str]) -> set[str]:
    """The owner names among ``names`` whose lock is held by a live process."""
    alive: set[str] = set()
    for name in set(names):
        if not _NAME.fullmatch(name):
            continue
        try:
            fd = os.open(directory / f"{name}.lock", os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
        except FileNotFoundError:
            continue  # the owner ended cleanly and removed its lock
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            alive.add(name)
        else:
            # Taken: its owner died without cleaning up. Remove the stale file while we hold it.
            (directory / f"{name}.lock").unlink(missing_ok=True)
        finally:
            os.close(fd)
    return alive
