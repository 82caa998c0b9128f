"""One warm-pool container as the pool holds it: its slot, its container, its runtime directory
and the FIFOs it waits on (:mod:`supervisor.docker._pool` keeps them; :mod:`roles._claim` is the
container's side)."""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import structlog

from store.errors import RoundtableError
from supervisor.docker._client import DockerClient
from supervisor.docker._slot import GO_LINE
from supervisor.launch import DEFAULT_CPU_SHARES, LaunchRuntimeDir

__all__ = ["PooledContainer", "no_dir"]

_WEIGHT_SECONDS = 30.0
_log = structlog.get_logger("roundtable.pool")


@dataclass(eq=False)
class PooledContainer:
    """One pooled container: its slot, its container, its runtime directory and its FIFOs."""

    slot_id: str
    rundir: LaunchRuntimeDir
    shape: tuple[Any, ...]
    container_id: str = ""
    claimed: bool = False
    released: bool = False
    """Whether the go line went out: from then on the launch's launcher owns the container."""
    ready: anyio.Event = field(default_factory=anyio.Event)
    gone: anyio.Event = field(default_factory=anyio.Event)
    docker: DockerClient | None = field(default=None, repr=False)
    watching: anyio.CancelScope = field(default_factory=anyio.CancelScope, repr=False)
    """The scope of the wait that notices a ready container ending before its claim (cancelled by it)."""
    filling: anyio.CancelScope = field(default_factory=anyio.CancelScope, repr=False)
    """The scope of the pool's task that starts this container: evicting a starting one cancels it,
    and that task removes what it started (so nothing closes its FIFOs under it)."""
    weighted: anyio.Event = field(default_factory=anyio.Event, repr=False)
    low_weight: bool = True
    """Whether it waits at the lowest CPU weight (a refilling pool's), to be restored when lent."""
    _weighing: bool = field(default=False, repr=False)
    _fds: list[int] = field(default_factory=list, repr=False)

    async def wait_ready(self) -> bool:
        """Wait until the container waits for its go line; False if it died or was removed first."""
        async with anyio.create_task_group() as group:

            async def either(event: anyio.Event) -> None:
                await event.wait()
                group.cancel_scope.cancel()

            group.start_soon(either, self.ready)
            group.start_soon(either, self.gone)
        return self.ready.is_set() and not self.gone.is_set()

    async def restore_weight(self) -> None:
        """Give the container the engine's default CPU weight back (it waited at the lowest): started
        when it is lent, so the launch's own preparation hides the engine's round trip."""
        try:
            if self.docker is not None and self.low_weight:
                with anyio.move_on_after(_WEIGHT_SECONDS, shield=True):
                    await self.docker.update_cpu_shares(self.container_id, DEFAULT_CPU_SHARES)
        except RoundtableError as exc:  # it runs all the same, only on a lower weight
            _log.warning("pool_weight_not_restored", slot_id=self.slot_id, error=exc.message)
        finally:
            self.weighted.set()

    async def release(self) -> None:
        """Let the claimed container go on, at the default CPU weight (:meth:`restore_weight`, awaited
        here): write the go line (the FIFO is held open: never blocks)."""
        if self._weighing:
            await self.weighted.wait()
        else:
            await self.restore_weight()
        go_fd = self._fds[1]
        os.write(go_fd, GO_LINE)
        self.released = True
        self.close_fds()

    def close_fds(self) -> None:
        """Close the FIFOs (a container still waiting then reads end-of-file and exits)."""
        while self._fds:
            with contextlib.suppress(OSError):
                os.close(self._fds.pop())


def no_dir() -> LaunchRuntimeDir:
    """The placeholder directory of a slot not prepared yet."""
    return LaunchRuntimeDir("", Path())
