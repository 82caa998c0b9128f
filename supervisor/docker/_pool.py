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
tokens nobody waits for, and while a launch that claimed one of its containers runs, one container
at a time (:meth:`WarmPool.refill_waits`): creating and starting a container is the engine's CPU,
which a burst of launches needs for their own containers. A launch that cannot use the pool and
finds every token taken evicts an idle pooled container (:meth:`WarmPool.evict_idle`).
:meth:`WarmPool.run` removes every unclaimed container when it stops; the reaper removes those of a
pool whose owner died.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import structlog

from store.errors import RoundtableError
from supervisor.docker._client import DockerClient
from supervisor.docker._pool_start import SlotStarter, new_slot_id
from supervisor.docker._pooled import PooledContainer, no_dir
from supervisor.docker._prestart import Prestart
from supervisor.launch import LaunchPlan, RuntimeRoot, container_name

__all__ = ["WarmPool", "acquire_slot", "plan_shape"]

_MAX_FAILURES = 3
_DISABLED = "pooled containers end before their claim; is the role image current (roundtable image build)?"
_UNREACHABLE = "the Docker engine could not start pooled containers (see last_error); launches run cold"
_log = structlog.get_logger("roundtable.pool")


async def acquire_slot(limiter: anyio.CapacityLimiter, pool: WarmPool | None, borrower: object) -> None:
    """Take a launch slot of ``limiter`` for ``borrower``, evicting ``pool``'s idle containers when
    none is free."""
    while True:
        try:
            limiter.acquire_on_behalf_of_nowait(borrower)
            return
        except anyio.WouldBlock:
            if pool is None or not pool.evict_idle():
                await limiter.acquire_on_behalf_of(borrower)
                return


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
        prestart: Prestart | None = None,
        recipe_of: Path | None = None,
    ):
        """``refill=False``: start ``size`` containers and no more (a one-shot command's pool).
        ``prestart``: a container started for this pool's first slot before the pool existed, adopted
        if it is exactly what the pool would create (:mod:`supervisor.docker._prestart`).
        ``recipe_of``: the project root whose recipe each container the pool creates is recorded as."""
        self.docker = docker
        self.limiter = limiter
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
        self._starter = SlotStarter(
            docker, runtime, plan=plan, supervisor_id=supervisor_id, owner=owner, prestart=prestart,
            recipe_of=recipe_of,
        )  # fmt: skip

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
                        # A new event before the top-up, here only: a poke during it runs the loop
                        # again, and a top-up from elsewhere (until_ready) never strands this wait.
                        self._changed = anyio.Event()
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
            await self._starter.discard_prestart()  # never filled (no free launch slot): not ours to keep
            self._stopped.set()

    async def stop(self) -> None:
        """Stop :meth:`run` and wait until it has removed every container not let go to a launch."""
        self._scope.cancel()
        await self._stopped.wait()

    def refill_waits(self) -> bool:
        """Whether the next refill waits for the one under way: it does while a claimed container's
        launch runs (one unclaimed refill at a time, so the engine's work for later launches does
        not compete with the running ones'), never otherwise. A launch that claims the container
        under way lets the next one start (it waits for it: the pool is short), and refilling never
        stops: a long launch cannot leave the pool empty for the launches after it."""
        if not self._refill:
            return False
        claimed = starting = False
        for slot in self._slots:
            if slot.claimed:
                claimed = True
            elif not slot.ready.is_set() and not slot.gone.is_set():
                starting = True
        return claimed and starting

    def _top_up(self, group: anyio.abc.TaskGroup) -> None:
        """Start filling slots until the pool is full, no launch slot is free, or a refill waits."""
        while len(self.idle) < self.size and not self.disabled:
            if not self._refill and self._started >= self.size:
                return
            if self.refill_waits():
                return
            slot_id, weight = new_slot_id(), self._refill  # a one-shot's runs at once
            if (prestart := self._starter.prestart) is not None and not self._slots:
                slot_id = prestart.slot_id
            slot = PooledContainer(slot_id, no_dir(), self.shape, docker=self.docker, low_weight=weight)
            try:
                self.limiter.acquire_on_behalf_of_nowait(slot)
            except anyio.WouldBlock:
                return
            self._slots.append(slot)
            self._started += 1
            group.start_soon(self._fill, slot)

    async def until_ready(self) -> int:
        """Wait until the pool is as full as its free launch slots let it be and every unclaimed
        container is ready (or gone); return how many are ready. Refills that are due (a launch just
        ended) or that wait for the one under way are started here as they may."""
        while True:
            if self._group is not None:
                self._top_up(self._group)
            pending = [s for s in self.idle if not s.ready.is_set() and not s.gone.is_set()]
            if not pending:
                break
            await pending[0].wait_ready()
        return sum(1 for s in self.idle if s.ready.is_set())

    def claim(self, plan: LaunchPlan) -> PooledContainer | None:
        """An unclaimed container for ``plan`` (its limiter token comes with it), or None; never the
        same container twice. The caller must :meth:`finished` it when its launch ends."""
        if plan_shape(plan) != self.shape or self._group is None:
            return None
        for slot in self.idle:  # ready ones first
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
                ready = await self._starter.start(slot)
            except (OSError, RoundtableError) as exc:
                log.warning("pool_fill_failed", error=str(exc))
                failure = str(exc)
            except Exception as exc:  # one slot's surprise must never end the pool (nor the service)
                log.exception("pool_fill_failed")
                failure = type(exc).__name__
            if ready and not slot.gone.is_set():
                self._failures = 0
                slot.ready.set()
                self.poke()  # a refill that waited for this one may start
                log.info("pool_container_ready", container_id=slot.container_id[:12])
                if await self._starter.ended_unclaimed(slot):  # died while it waited: replaced, not lent
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
