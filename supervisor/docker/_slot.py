"""A warm-pool slot's runtime directory: two FIFOs, no token, no socket (the host side of
:mod:`roles._claim`).

Shared by the pool (:mod:`supervisor.docker._pool`) and a cold launch's prestart
(:mod:`supervisor.docker._prestart`), so a prestarted container waits for its claim exactly as a
pooled one does. The standard library and the runtime directory's module only: a prestart prepares
its slot before the command has imported anything else.
"""

from __future__ import annotations

import contextlib
import os

from supervisor.launch import LaunchRuntimeDir, RuntimeRoot

__all__ = ["GO_FIFO", "GO_LINE", "READY_FIFO", "open_slot"]

GO_FIFO = "go"
READY_FIFO = "ready"
GO_LINE = b"go\n"
"""What :mod:`roles._claim` waits for (these three names are that module's, repeated: the
supervisor imports nothing of the role image's code)."""


def open_slot(runtime: RuntimeRoot, slot_id: str, fds: list[int]) -> LaunchRuntimeDir:
    """Create ``slot_id``'s runtime directory with its ready and go FIFOs, each held open read-write
    (appended to ``fds``: neither end's open blocks, and reads wait for data). On failure, what was
    made is removed and the descriptors closed before the error propagates."""
    rundir = runtime.create(slot_id)
    try:
        for name in (READY_FIFO, GO_FIFO):
            path = rundir.make_fifo(name)
            fds.append(os.open(path, os.O_RDWR | os.O_NONBLOCK | os.O_CLOEXEC))
    except BaseException:
        while fds:
            with contextlib.suppress(OSError):
                os.close(fds.pop())
        rundir.remove()
        raise
    return rundir
