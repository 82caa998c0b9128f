"""The warm pool: hardened role containers started before any launch, each claimed by one launch.

``roundtable serve`` keeps ``[supervisor] warm_pool`` containers of the MemoryOracle's launch plan
started and waiting. A pooled container is created exactly as a launch's
(:func:`~supervisor.launch.container_kwargs`, every measure), labelled with the pool's owner
(:data:`~supervisor.launch.LABEL_POOL`) and a slot id (``W-<12 hex>``) where a launch id would be,
with no grant, no token, no socket and nothing of any proposal: its runtime directory holds two FIFOs
and nothing else (:mod:`roles._claim` is the container's side). It counts against
``max_concurrent_launches``: each slot holds one of the supervisor's limiter tokens from the moment
it is filled until the launch that claims it ends.

:meth:`WarmPool.claim` hands an unclaimed container of the right plan to one launch and never again;
the launch then writes its token and binds its socket in that directory and releases the container
(:meth:`PooledContainer.release`, the go line). The pool refills in the background, only with
tokens nobody waits for. A launch that cannot use the pool and finds every token taken evicts an
idle pooled container (:meth:`WarmPool.evict_idle`). :meth:`WarmPool.run` removes every unclaimed
container when it stops; the reaper removes those of a pool whose owner died.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import structlog

from store.errors import RoundtableError
from supervisor.docker._client import DockerClient
from supervisor.launch import (
    DEFAULT_CPU_SHARES,
    LaunchPlan,
    LaunchRuntimeDir,
    RuntimeRoot,
    container_kwargs,
    container_name,
)

__all__ = ["GO_FIFO", "GO_LINE", "READY_FIFO", "PooledContainer", "WarmPool", "plan_shape"]

GO_FIFO = "go"
READY_FIFO = "ready"
GO_LINE = b"go\n"
"""What :mod:`roles._claim` waits for (these three names are that module's, repeated: the
supervisor imports nothing of the role image's code)."""
_UNCLAIMED = "unclaimed"
_READY_SECONDS = 120.0
_WATCH_SECONDS = 7 * 24 * 3600.0
_WEIGHT_SECONDS = 30.0
_MAX_FAILURES = 3
_DISABLED = "pooled containers end before their claim; is the role image current (roundtable image build)?"
_UNREACHABLE = "the Docker engine could not start pooled containers (see last_error); launches run cold"
_log = structlog.get_logger("roundtable.pool")


def plan_shape(plan: LaunchPlan) -> tuple[Any, ...]:
    """What a container is created with, from a plan: two plans of one shape share a pool."""
    return (
        plan.role,
        plan.image,
        plan.command,
        plan.entrypoint,
        tuple(sorted(plan.environment.items())),
        plan.limits,
    )


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


class WarmPool:
    """Keeps ``size`` containers of ``plan`` ready for :class:`~supervisor.Supervisor` launches."""

    def __init__(
        self,
        docker: DockerClient,
        runtime: RuntimeRoot,
        *,
        supervisor_id: str,
        owner: str,
        limiter: anyio.CapacityLimiter,
        plan: LaunchPlan,
        size: int,
        refill: bool = True,
    ):
        """``refill=False``: start ``size`` containers and no more (a one-shot command's pool)."""
        self.docker = docker
        self.runtime = runtime
        self.supervisor_id = supervisor_id
        self.owner = owner
        self.limiter = limiter
        self.plan = plan
        self.shape = plan_shape(plan)
        self.size = size
        self._slots: list[PooledContainer] = []
        self._changed = anyio.Event()
        self._failures = 0
        self._group: anyio.abc.TaskGroup | None = None
        self._refill = refill
        self._started = 0
        self._scope = anyio.CancelScope()
        self._stopped = anyio.Event()

    @property
    def idle(self) -> list[PooledContainer]:
        """The unclaimed containers, ready ones first."""
        return sorted((s for s in self._slots if not s.claimed), key=lambda s: not s.ready.is_set())

    @property
    def disabled(self) -> bool:
        """Whether the pool gave up refilling (containers died before their claim, one after another)."""
        return self._failures >= _MAX_FAILURES

    def poke(self) -> None:
        """Tell the refill loop that a token may be free."""
        self._changed.set()

    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Fill and refill the pool until cancelled, then remove every unclaimed container."""
        try:
            with self._scope:
                async with anyio.create_task_group() as group:
                    self._group = group
                    self._top_up(group)
                    task_status.started()  # the first containers are on their way
                    while True:
                        await self._changed.wait()
                        self._top_up(group)
        finally:
            self._group = None
            for slot in self._slots:
                if not slot.ready.is_set():
                    slot.gone.set()  # a launch waiting for it goes cold instead
            with anyio.CancelScope(shield=True), anyio.move_on_after(60):
                async with anyio.create_task_group() as cleanup:
                    # Claimed but never let go: its launch fails at the go line, if it gets there.
                    for slot in [s for s in self._slots if not s.released]:
                        cleanup.start_soon(self._discard, slot)
            self._stopped.set()

    async def stop(self) -> None:
        """Stop :meth:`run` and wait until it has removed every container not let go to a launch."""
        self._scope.cancel()
        await self._stopped.wait()

    def _top_up(self, group: anyio.abc.TaskGroup) -> None:
        """Start filling slots until the pool is full or no launch slot is free."""
        self._changed = anyio.Event()
        while len(self.idle) < self.size and not self.disabled:
            if not self._refill and self._started >= self.size:
                return
            slot_id, weight = f"W-{secrets.token_hex(6)}", self._refill  # a one-shot's runs at once
            slot = PooledContainer(slot_id, _no_dir(), self.shape, docker=self.docker, low_weight=weight)
            try:
                self.limiter.acquire_on_behalf_of_nowait(slot)
            except anyio.WouldBlock:
                return
            self._slots.append(slot)
            self._started += 1
            group.start_soon(self._fill, slot)

    async def until_ready(self) -> int:
        """Wait until every unclaimed container is ready (or gone); return how many are ready."""
        while pending := [s for s in self.idle if not s.ready.is_set() and not s.gone.is_set()]:
            await pending[0].wait_ready()
        return sum(1 for s in self.idle if s.ready.is_set())

    def claim(self, plan: LaunchPlan) -> PooledContainer | None:
        """An unclaimed container for ``plan`` (its limiter token comes with it), or None; never the
        same container twice. The caller must :meth:`finished` it when its launch ends."""
        if plan_shape(plan) != self.shape or self._group is None:
            return None
        for slot in self.idle:
            if not slot.gone.is_set():
                slot.claimed = True
                slot.watching.cancel()  # from now on the launch's launcher waits for it
                self.poke()
                return slot
        return None

    async def lend(self, plan: LaunchPlan) -> PooledContainer | None:
        """:meth:`claim` a container for ``plan`` and wait until it is ready; None when there is
        none, or it died first (go cold). Cancelled meanwhile, the container is given back (removed)."""
        slot = self.claim(plan)
        if slot is None:
            return None
        try:
            if await slot.wait_ready():
                if self._group is not None:
                    slot._weighing = True
                    self._group.start_soon(slot.restore_weight)  # while the launch prepares
                return slot
        except BaseException:
            self.finished(slot)
            raise
        return None  # it died before its claim: the pool has freed its slot

    def finished(self, slot: PooledContainer) -> None:
        """The launch that claimed ``slot`` ended (or gave it up): its token is free again, and a
        container it never let go is removed (the pool's own clean-up does it if the pool stopped)."""
        if slot.released:
            self._release(slot)
        elif self._group is not None:
            self._group.start_soon(self._discard, slot)

    def evict_idle(self) -> bool:
        """Give one idle container's token back now (the container is removed in the background)."""
        if self._group is None:
            return False
        for slot in self.idle[::-1]:  # a starting one before a ready one
            slot.claimed = True  # nobody else may take it
            if slot.ready.is_set():
                self._group.start_soon(self._discard, slot)
            else:
                slot.filling.cancel()  # its fill task removes what it started
            self._release(slot)
            return True
        return False

    def _release(self, slot: PooledContainer) -> None:
        if slot in self._slots:
            self._slots.remove(slot)
            self.limiter.release_on_behalf_of(slot)
            self.poke()

    async def _fill(self, slot: PooledContainer) -> None:
        with slot.filling:  # cancelled alone when the slot is evicted while it starts
            await self._fill_slot(slot)

    async def _fill_slot(self, slot: PooledContainer) -> None:
        log = _log.bind(slot_id=slot.slot_id)
        try:
            ready, failure = False, ""
            try:
                slot.rundir = await anyio.to_thread.run_sync(self._prepare, slot)
                # No token yet: the container's spec redacts nothing, for it has no secret.
                spec = self.plan.spec(slot.slot_id, _UNCLAIMED, slot.rundir.path, token="")
                kwargs = container_kwargs(
                    spec, self.supervisor_id, pool_owner=self.owner, low_weight=slot.low_weight
                )
                slot.container_id = await self.docker.create(kwargs)
                await self.docker.start(slot.container_id)
                ready = await self._await_ready(slot)
            except (OSError, RoundtableError) as exc:
                log.warning("pool_fill_failed", error=str(exc))
                failure = str(exc)
            except Exception as exc:  # one slot's surprise must never end the pool (nor the service)
                log.exception("pool_fill_failed")
                failure = type(exc).__name__
            if ready and not slot.gone.is_set():
                self._failures = 0
                slot.ready.set()
                log.info("pool_container_ready", container_id=slot.container_id[:12])
                if await self._ended_unclaimed(slot):  # died while it waited: replaced, not lent
                    log.warning("pool_container_died", container_id=slot.container_id[:12])
                    with anyio.CancelScope(shield=True):
                        await self._discard(slot)
                return
            if not slot.claimed:
                self._failures += 1
                if self.disabled:
                    # The engine's own error, when there is one, says more than the usual cause.
                    log.error(
                        "pool_disabled", reason=_UNREACHABLE if failure else _DISABLED, last_error=failure
                    )
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):
                await self._discard(slot)
            raise
        with anyio.CancelScope(shield=True):
            await self._discard(slot)

    async def _ended_unclaimed(self, slot: PooledContainer) -> bool:
        """Wait while ``slot`` waits for its claim; True if its container ended first (its claim, an
        eviction or an engine that cannot be asked end the wait with False)."""
        with slot.watching:
            try:
                status = await self.docker.wait(slot.container_id, _WATCH_SECONDS)
            except RoundtableError:
                return False
            return status is not None and not slot.claimed
        return False

    def _prepare(self, slot: PooledContainer) -> LaunchRuntimeDir:
        rundir = self.runtime.create(slot.slot_id)
        slot.rundir = rundir
        for name in (READY_FIFO, GO_FIFO):
            path = rundir.make_fifo(name)
            # Held read-write by the supervisor: neither end's open blocks, and reads wait for data.
            slot._fds.append(os.open(path, os.O_RDWR | os.O_NONBLOCK | os.O_CLOEXEC))
        return rundir

    async def _await_ready(self, slot: PooledContainer) -> bool:
        """True once the container says ready on its FIFO; False if it exits (or takes too long)."""
        outcome: list[bool] = []
        with anyio.move_on_after(_READY_SECONDS):
            async with anyio.create_task_group() as group:

                async def said_ready() -> None:
                    await anyio.wait_readable(slot._fds[0])
                    outcome.append(True)
                    group.cancel_scope.cancel()

                async def exited() -> None:
                    await self.docker.wait(slot.container_id, _READY_SECONDS)
                    outcome.append(False)
                    group.cancel_scope.cancel()

                group.start_soon(said_ready)
                group.start_soon(exited)
        return bool(outcome) and outcome[0]

    async def _discard(self, slot: PooledContainer) -> None:
        """Remove an unclaimed (or evicted) slot's container and directory, and free its token."""
        slot.gone.set()
        slot.close_fds()
        if slot.rundir.path.name:  # prepared: a container may exist (by name if its id never came)
            try:
                await self.docker.remove(slot.container_id or container_name(slot.slot_id))
            except RoundtableError as exc:
                _log.warning("pool_remove_failed", slot_id=slot.slot_id, error=exc.message)
            await anyio.to_thread.run_sync(slot.rundir.remove)
        self._release(slot)


def _no_dir() -> LaunchRuntimeDir:
    """The placeholder directory of a slot not prepared yet."""
    return LaunchRuntimeDir("", Path())
