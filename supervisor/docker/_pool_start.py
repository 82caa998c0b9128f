"""Starting one warm-pool container, up to the moment it waits for its claim.

:class:`SlotStarter` is the pool's (:mod:`supervisor.docker._pool`) hands on the engine for one
slot: it prepares the slot's runtime directory (two FIFOs, :mod:`supervisor.docker._slot`), creates
and starts the container exactly as a launch's (:func:`~supervisor.launch.container_kwargs`, every
measure, labelled with the pool's owner), or adopts a cold launch's prestarted container when it is
exactly that container (:mod:`supervisor.docker._prestart`), and waits until the container says it
waits on its FIFO. The pool decides when to start a slot and what to do when one fails; this module
only does the starting.
"""

from __future__ import annotations

import secrets
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import structlog

from store.errors import RoundtableError
from supervisor.docker._client import DockerClient
from supervisor.docker._pooled import PooledContainer
from supervisor.docker._prestart import Prestart, Recipe, config_digest, write_recipe
from supervisor.docker._slot import open_slot
from supervisor.launch import LaunchPlan, LaunchRuntimeDir, RuntimeRoot, container_kwargs

__all__ = ["SlotStarter", "new_slot_id"]

_UNCLAIMED = "unclaimed"
_READY_SECONDS = 120.0
_WATCH_SECONDS = 7 * 24 * 3600.0
_log = structlog.get_logger("roundtable.pool")


def new_slot_id() -> str:
    """A fresh slot id (``W-<12 hex>``), where a launch id would be in a container's name."""
    return f"W-{secrets.token_hex(6)}"


class SlotStarter:
    """Starts the containers of one pool: ``plan``'s, labelled with ``owner``, on ``docker``."""

    def __init__(
        self,
        docker: DockerClient,
        runtime: RuntimeRoot,
        *,
        plan: LaunchPlan,
        supervisor_id: str,
        owner: str,
        prestart: Prestart | None = None,
        recipe_of: Path | None = None,
    ):
        """``prestart``: a container started before the pool existed, for the slot of its id.
        ``recipe_of``: the project root whose recipe each container started here is recorded as."""
        self.docker = docker
        self.runtime = runtime
        self.plan = plan
        self.supervisor_id = supervisor_id
        self.owner = owner
        self.prestart = prestart
        self.recipe_of = recipe_of

    async def start(self, slot: PooledContainer) -> bool:
        """Start ``slot``'s container (or adopt the prestart) and wait until it waits for its claim:
        True then, False if it exits first (or takes too long). The engine's and the file system's
        errors propagate; whatever was made is the pool's to discard (``slot`` records it)."""
        if not await self._adopted(slot):
            slot.rundir = await anyio.to_thread.run_sync(self._prepare, slot)
            kwargs = self._kwargs(slot, slot.rundir.path)
            slot.container_id = await self.docker.create(kwargs)
            await self.docker.start(slot.container_id)
            if self.recipe_of is not None:
                await anyio.to_thread.run_sync(self._write_recipe, self.recipe_of, slot, kwargs)
        return await self._await_ready(slot)

    def _kwargs(self, slot: PooledContainer, rundir: Path) -> dict[str, Any]:
        """The create arguments of ``slot``'s container, with its runtime directory ``rundir``."""
        # No token yet: the container's spec redacts nothing, for it has no secret.
        spec = self.plan.spec(slot.slot_id, _UNCLAIMED, rundir, token="")
        return container_kwargs(spec, self.supervisor_id, pool_owner=self.owner, low_weight=slot.low_weight)

    async def ended_unclaimed(self, slot: PooledContainer) -> bool:
        """Wait while ``slot`` waits for its claim; True if its container ended first (its claim, an
        eviction or an engine that cannot be asked end the wait with False)."""
        with slot.watching:
            try:
                status = await self.docker.wait(slot.container_id, _WATCH_SECONDS)
            except RoundtableError:
                return False
            return status is not None and not slot.claimed
        return False

    async def discard_prestart(self) -> None:
        """Remove the prestarted container if no slot adopted it (it is not the pool's to keep)."""
        if self.prestart is not None:
            prestart, self.prestart = self.prestart, None
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(partial(prestart.discard, release_lock=False))

    def _write_recipe(self, project_root: Path, slot: PooledContainer, kwargs: dict[str, Any]) -> None:
        """Record the recipe of ``slot``'s container; a failure costs the next launch its prestart only."""
        digest = config_digest(project_root)
        if not digest:
            return
        recipe = Recipe(digest, kwargs, slot.slot_id, self.owner, str(slot.rundir.path), self.supervisor_id)
        try:
            write_recipe(self.runtime, recipe)
        except (OSError, RoundtableError) as exc:
            _log.warning("prestart_recipe_not_written", error=str(exc))

    async def _adopted(self, slot: PooledContainer) -> bool:
        """Take the prestarted container as ``slot``'s if it is exactly the one the pool would create;
        else remove it (and give the slot a fresh id). False without a prestart for this slot. The
        prestart stays the pool's to discard (:meth:`discard_prestart`) until adopted or removed here."""
        prestart = self.prestart
        if prestart is None or prestart.slot_id != slot.slot_id:
            return False
        container_id = await anyio.to_thread.run_sync(prestart.started)
        rundir = prestart.rundir
        kwargs = None if rundir is None else self._kwargs(slot, rundir.path)
        if (
            container_id
            and rundir
            and kwargs
            and prestart.matches(kwargs, runtime=self.runtime, owner=self.owner)
        ):
            slot._fds.extend(prestart.adopt())
            self.prestart = None
            slot.rundir, slot.container_id = rundir, container_id
            _log.info("pool_prestart_adopted", slot_id=slot.slot_id, container_id=container_id[:12])
            return True
        _log.info(
            "pool_prestart_discarded", slot_id=slot.slot_id, reason=prestart.error or "arguments differ"
        )
        await self.discard_prestart()
        slot.slot_id = new_slot_id()
        return False

    def _prepare(self, slot: PooledContainer) -> LaunchRuntimeDir:
        slot.rundir = open_slot(self.runtime, slot.slot_id, slot._fds)
        return slot.rundir

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
