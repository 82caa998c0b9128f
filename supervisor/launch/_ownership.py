"""Which supervisor process owns a launch, decided by a lock the owner holds while it lives.

Each :class:`~supervisor.supervisor.Supervisor` takes an exclusive ``flock`` on a file of its own
under the runtime root for as long as it runs, and records that file's name as the ``owner`` of
every launch it starts. Another supervisor of the same project (``roundtable serve`` beside a CLI
``oracle launch``) reaps a launch only when its owner's lock can be taken: the kernel releases a
lock when its process dies, however it dies, so a lock that is still held means a live owner.

That holds on one machine only. On a PostgreSQL store, shared by supervisors on several hosts,
:func:`owner_for` gives an :class:`~supervisor.launch._lease.OwnerLease` (a heartbeat lease in the
database) instead; both answer the same questions (:data:`Ownership`). SQLite keeps the lock: a
dead owner is seen at once, with no ttl to wait out.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import secrets
from collections.abc import Collection, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias

from supervisor.launch._runtime_dir import made_in_directory

if TYPE_CHECKING:
    from store import Store
    from supervisor.launch._lease import OwnerLease

__all__ = ["OwnerLock", "Ownership", "live_owners", "owner_directory", "owner_for"]

_NAME = re.compile(r"[0-9]+-[0-9a-f]{8}")


class OwnerLock:
    """The lock one supervisor instance holds for its whole life."""

    def __init__(self, directory: Path):
        self.directory = directory
        self.name = _owner_name()
        self._fd: int | None = None
        self.engine = ""  # unused on one machine: every owner shares the engine

    valid = True
    """A held lock cannot lapse while its process lives."""

    def check(self) -> None:
        """Nothing to check: a live process holds its lock."""

    @property
    def path(self) -> Path:
        """The lock file."""
        return self.directory / f"{self.name}.lock"

    def acquire(self) -> None:
        """Create the lock file and lock it (the owner is alive from here on); held already (a cold
        launch's prestart took it for this supervisor: :mod:`supervisor.docker._prestart`), nothing."""
        if self._fd is not None:
            return
        fd = made_in_directory(
            lambda: self.directory.mkdir(mode=0o700, parents=True, exist_ok=True),
            lambda: os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600),
        )
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        self._fd = fd

    def release(self) -> None:
        """Unlock and remove the lock file, and its directory when no other owner's lock is left in it."""
        if self._fd is None:
            return
        try:
            self.path.unlink(missing_ok=True)
        finally:
            os.close(self._fd)  # closing releases the lock
            self._fd = None
        with contextlib.suppress(OSError):  # another owner's lock is in it, or it is gone already
            os.rmdir(self.directory)

    def live(self, names: Collection[str]) -> set[str]:
        """The owners among ``names`` whose lock is held (see :func:`live_owners`)."""
        return live_owners(self.directory, names)

    def dead(self, names: Collection[str]) -> set[str]:
        """The owners among ``names`` proven dead here: their lock file is in this directory and no
        process holds it (a missing file proves nothing: the owner may live on another host)."""
        return {name for name in set(names) if _probe(self.directory, name) is False}


Ownership: TypeAlias = "OwnerLock | OwnerLease"
"""What a supervisor holds to own its launches: a lock on one machine, a lease across hosts."""


def owner_directory(runtime_path: Path, supervisor_id: str) -> Path:
    """Where the owner locks of the supervisor whose runtime directory is ``runtime_path`` live."""
    return runtime_path.parent / "owners" / supervisor_id[:12]


def owner_for(store: Store, directory: Path) -> Ownership:
    """A lease on a PostgreSQL store (``[supervisor] lease_ttl_seconds``), else a lock in ``directory``."""
    if store.db.backend == "postgresql":
        from store.launches import LeaseStore  # the lock alone imports nothing of the store
        from supervisor.launch._lease import OwnerLease

        return OwnerLease(
            LeaseStore(store.launches),
            ttl_seconds=store.config.supervisor.lease_ttl_seconds,
            local=OwnerLock(directory),
        )
    return OwnerLock(directory)


def live_owners(directory: Path, names: Iterable[str]) -> set[str]:
    """The owner names among ``names`` whose lock is held by a live process."""
    return {name for name in set(names) if _probe(directory, name)}


def _owner_name() -> str:
    """A new owner's name: this process's pid and a random part (a lock file's and a lease's)."""
    return f"{os.getpid()}-{secrets.token_hex(4)}"


def _probe(directory: Path, name: str) -> bool | None:
    """True when ``name``'s lock is held, False when its file was left by a dead owner (removed now),
    None when there is no such lock file (or the name is not an owner's)."""
    if not _NAME.fullmatch(name):
        return None
    try:
        fd = os.open(directory / f"{name}.lock", os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return None  # the owner ended cleanly and removed its lock, or never had one here
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    else:
        # Taken: its owner died without cleaning up. Remove the stale file while we hold it.
        (directory / f"{name}.lock").unlink(missing_ok=True)
        return False
    finally:
        os.close(fd)
