"""The supervisor: the only way a role starts, and the guarantee that it ends cleanly.

:meth:`Supervisor.launch_role` is the explicit orchestration action behind ``roundtable oracle
launch``. For one launch it:

1. checks that the proposal exists, is open, and has a current patch version;
2. records the launch (``requested``) and mints a capability grant bound to the proposal and the
   launch, expiring at the deadline plus a margin;
3. creates the per-launch runtime directory, writes the token file (0400, container user) and
   serves the MCP application on the launch's Unix socket, accepting that grant only, with the
   model gateway route beside it;
4. runs the hardened container through the :class:`~supervisor.launcher.Launcher`, with a deadline;
5. whatever happens (exit, crash, timeout, cancellation, shutdown) revokes the grant, stops the
   socket server, removes the runtime directory, and returns the recorded outcome with the
   warnings the oracle wrote.

A launch whose provider could not do its job ends ``failed`` with a reason. The model gateway's
record is authoritative: when the container stops, the first failure the gateway saw
(``model_unavailable``, ``model_error``, ``budget_exhausted``) is noted on the launch
(:meth:`~store.launches.LaunchStore.note_failure`), so it ends ``failed`` with that reason and the
gateway's message whatever exit status the container reports. A container that says its provider
failed when the gateway saw nothing ends ``failed`` with ``provider_failed``. Warnings written
before the failure stay: they were real.

Launches run concurrently up to ``[supervisor] max_concurrent_launches``. At start the supervisor
reaps what a dead owner (its lock free; on PostgreSQL, its lease expired) left: labelled containers,
runtime directories, launches still active (failed as ``supervisor_restarted``), grants (revoked).

A long-running supervisor (``roundtable serve``) runs inside :meth:`Supervisor.warm`: a warm pool
(:class:`~supervisor.docker.WarmPool`, ``[supervisor] warm_pool`` containers, counted against
``max_concurrent_launches``) that a launch of the pool's plan claims instead of creating a container,
binding its grant, token and socket to it at that moment (the deadline starts then); and background
clean-up, so that a launch answers once its grant is revoked, its container has stopped and its end
is recorded, while the container's removal finishes after (the reaper removes it if the process
dies first).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from functools import partial
from typing import TYPE_CHECKING, Any

import anyio
import structlog

from store import Store
from store.errors import Conflict, InvalidArgument, LaunchFailed, RoundtableError
from store.events import Event, list_events
from store.launches import Launch
from store.work import ProposalStatus
from supervisor import docker as docker_side  # the lease helpers, the launch-slot ones
from supervisor._launch_records import MachineryLoader, fail_unstarted, note_model_failure
from supervisor._launchers import configured_launcher
from supervisor.docker import DockerLauncher, Launcher, PooledContainer, Prestart, WarmPool
from supervisor.launch import (
    LaunchPhase,
    LaunchPlan,
    LaunchResult,
    LaunchRuntimeDir,
    LaunchSpec,
    OwnerLock,
    Ownership,
    PhaseReporter,
    RuntimeRoot,
    launch_socket,
    oracle_plan,
    owner_directory,
    owner_for,
    report_phase,
    supervisor_id_for,
    unwrap_error,
)

if TYPE_CHECKING:
    from capabilities.services import Services

__all__ = ["ROLES", "LaunchResult", "PhaseReporter", "Supervisor"]

ROLES = ("memory_oracle",)
"""Roles the supervisor can launch."""

_ACTOR = "supervisor"
_GRANT_MARGIN_SECONDS = 60
_CLEANUP_SECONDS = 30.0
_log = structlog.get_logger("roundtable.supervisor")


class Supervisor:
    """Runs role launches for one project's store. Use as ``async with Supervisor(store) as sup``."""

    def __init__(
        self,
        store: Store,
        *,
        launcher: Launcher | None = None,
        runtime: RuntimeRoot | None = None,
        model_transport: Any = None,
        spec_transform: Callable[[LaunchSpec], LaunchSpec] | None = None,
        prestart: Prestart | None = None,
    ):
        """``model_transport`` (an httpx2 transport) and ``spec_transform`` exist for tests that
        inject faults: the first reroutes model requests, the second rewrites a launch's container
        spec (say, to run a process that hangs or crashes). Neither changes any hardening measure,
        which :func:`~supervisor.launch_spec.container_kwargs` always applies. ``prestart``: a cold
        launch's early container (:mod:`supervisor.docker._prestart`), adopted by a one-shot pool."""
        self.store = store
        self._services: Services | None = None
        self.supervisor_id = supervisor_id_for(store.paths.root)
        self.runtime = runtime or RuntimeRoot(self.supervisor_id)
        self._owns_launcher = launcher is None
        self._prestart = prestart
        fits = prestart is not None and launcher is None and prestart.fits(self.runtime, store.db.backend)
        self._owner: Ownership = (prestart.lock if prestart and fits else None) or owner_for(
            store, owner_directory(self.runtime.path, self.supervisor_id)
        )
        self.launcher: Launcher = launcher or configured_launcher(
            store, supervisor_id=self.supervisor_id, runtime=self.runtime, owner=self._owner
        )
        self._limiter = anyio.CapacityLimiter(store.config.supervisor.max_concurrent_launches)
        self._model_transport = model_transport
        self._spec_transform = spec_transform
        self.pool: WarmPool | None = None
        self._background: anyio.abc.TaskGroup | None = None
        self._spawn: docker_side.Spawn | None = None
        self._machinery = MachineryLoader(self.runtime.base)

    @property
    def services(self) -> Services:
        """The tool services the launch sockets serve (built on first use: their imports are costly)."""
        from capabilities.services import Services

        self._services = self._services or Services(store=self.store)
        return self._services

    async def __aenter__(self) -> Supervisor:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def start(self) -> None:
        """Reap what a previous supervisor left: containers, directories, active launches, grants.

        Launches of another live supervisor process on this project are left alone."""
        # The owner lock lives in the private (0700, ours) runtime base: create it first, so nobody else can.
        await anyio.to_thread.run_sync(self.runtime.ensure)
        if self._prestart is not None and self._owner is not self._prestart.lock:
            await self._drop_prestart(release_lock=True)
        await docker_side.take_ownership(self._owner, getattr(self.launcher, "docker", None))
        active = await self.store.db.run(self.store.launches.active)
        owners = await anyio.to_thread.run_sync(self._owner.live, [a.owner for a in active if a.owner])
        alive = [launch.id for launch in active if launch.owner in owners]
        alive += [self._prestart.slot_id] if self._prestart is not None else []  # its directory stays
        report = await self.launcher.reap(on_orphan=self._revoke_orphan, keep=alive)
        _log.info("supervisor_started", supervisor_id=self.supervisor_id, reaped=str(report))

    async def aclose(self) -> None:
        """Release the owner lock and the engine connection, and remove this supervisor's runtime
        directory if it is empty (launches in flight clean up after themselves, in their own tasks)."""
        await self._drop_prestart(release_lock=False)  # never handed to a pool: not ours to keep
        await anyio.to_thread.run_sync(self._owner.release)  # a lease's release is a store write
        await anyio.to_thread.run_sync(self.runtime.tidy)  # no empty directory left behind
        if (closer := getattr(self.launcher, "aclose", None) if self._owns_launcher else None) is not None:
            await closer()

    @asynccontextmanager
    async def warm(
        self, size: int | None = None, *, one_shot: bool = False
    ) -> AsyncIterator[WarmPool | None]:
        """Run a warm pool of ``size`` (default ``[supervisor] warm_pool``; 0: none) and background
        clean-up for the duration of the block (module docstring); yields the pool. On the way out the
        pool's unclaimed containers are removed and pending clean-ups finish.

        ``one_shot`` (a command that runs its launches and ends): only the sockets' servers wind down
        in the background; containers are removed before a launch answers and the pool starts ``size``
        containers, no more (each while the launch machinery is imported: :meth:`launch`), so the
        command may end its process once it has answered and stopped the pool (``WarmPool.stop``)."""
        size = self.store.config.supervisor.warm_pool if size is None else size
        pooled = size > 0 and isinstance(self.launcher, DockerLauncher) and self._spec_transform is None
        try:
            async with anyio.create_task_group() as background:
                self._background, self._spawn = background, None if one_shot else background.start_soon
                pool_scope, watch = anyio.CancelScope(), anyio.CancelScope()
                if not one_shot:  # a long-running supervisor also reaps peers whose lease expired
                    background.start_soon(docker_side.watch_expired_owners, self.launcher, self._owner, watch)
                try:
                    if pooled and isinstance(self.launcher, DockerLauncher):
                        recipe = one_shot and isinstance(self._owner, OwnerLock)  # prestarts take locks
                        self.pool = WarmPool(
                            self.launcher.docker,
                            self.runtime,
                            supervisor_id=self.supervisor_id,
                            owner=self._owner.name,
                            limiter=self._limiter,
                            plan=self.oracle_plan(),
                            size=size,
                            refill=not one_shot,
                            prestart=self._prestart if one_shot else None,
                            recipe_of=self.store.paths.root if recipe else None,
                        )
                        self._prestart = None if one_shot else self._prestart

                        async def run_pool(task_status: anyio.abc.TaskStatus[None]) -> None:
                            assert self.pool is not None
                            with pool_scope:
                                await self.pool.run(task_status=task_status)

                        await background.start(run_pool)
                    yield self.pool
                finally:
                    self._background = self._spawn = None
                    pool_scope.cancel()
                    watch.cancel()
        except BaseExceptionGroup as group:
            error = unwrap_error(group)  # the block's own error, as it would come without the group
            if error is group:
                raise
            raise error from None
        finally:
            self.pool = None

    async def _drop_prestart(self, *, release_lock: bool) -> None:
        if (prestart := self._prestart) is not None:
            with anyio.CancelScope(shield=True):  # even on the way out of a cancelled command
                await anyio.to_thread.run_sync(partial(prestart.discard, release_lock=release_lock))
            self._prestart = None

    async def _revoke_orphan(self, launch_id: str) -> None:
        await self.store.db.run(
            self.store.grants.revoke_for_launch, launch_id, actor=_ACTOR, reason="supervisor_restarted"
        )

    # -- launches ------------------------------------------------------------------------------------

    async def launch_role(
        self,
        role: str,
        proposal_id: str,
        *,
        provider: str | None = None,
        timeout: float | None = None,  # noqa: ASYNC109 - the container's deadline, not this call's
        on_phase: PhaseReporter | None = None,
    ) -> LaunchResult:
        """Launch ``role`` for ``proposal_id`` and wait for it to end; see the module docstring."""
        if role not in ROLES:
            raise InvalidArgument(f"unknown role {role!r}; roles: {', '.join(ROLES)}")
        plan = self.oracle_plan(provider=provider, timeout=timeout)
        return await self.launch(plan, await self.open_proposal(proposal_id), on_phase=on_phase)

    def oracle_plan(self, *, provider: str | None = None, timeout: float | None = None) -> LaunchPlan:
        """The MemoryOracle's launch plan (``[roles.memory_oracle]``, with these overrides)."""
        return oracle_plan(self.store.config, provider=provider, timeout=timeout)

    async def open_proposal(self, proposal_id: str) -> dict[str, Any]:
        """The proposal, if a launch may review it: open, with a current patch version (else ``conflict``)."""
        proposal = await self.store.db.run(self.store.proposals.get, proposal_id)
        if ProposalStatus(proposal["status"]) in ProposalStatus.CLOSED_TO_LAUNCHES:
            raise Conflict(f"proposal {proposal_id} is {proposal['status']}; launches review open proposals")
        if proposal.get("patch") is None:
            raise Conflict(f"proposal {proposal_id} has no patch version to review")
        return proposal

    async def launch(
        self, plan: LaunchPlan, proposal: dict[str, Any], *, on_phase: PhaseReporter | None = None
    ) -> LaunchResult:
        """Run ``plan`` for ``proposal`` (from :meth:`open_proposal`) and wait for it to end.

        Waits for a slot first (``max_concurrent_launches``): a warm pool's container of the plan
        comes with its own; the launch is recorded when it has one.
        """
        self._owner.check()  # a supervisor that lost its lease starts nothing
        pool = self.pool  # the one that lent the slot, even if it stops meanwhile
        slot = None
        if pool is not None:
            async with anyio.create_task_group() as group:  # the imports run while the container starts
                group.start_soon(self._machinery.load, plan.role)
                slot = await pool.lend(plan)
        borrower = slot or object()
        if slot is None:
            await docker_side.acquire_slot(self._limiter, self.pool, borrower)
        try:
            launch = await self.store.db.run(
                self.store.launches.request,
                role=plan.role,
                agent_id=plan.agent_id,
                proposal_id=str(proposal["id"]),
                image=plan.image,
                task_id=str(proposal["task_id"]),
                provider=plan.provider,
                owner=self._owner.name,
            )
            return await self._run_launch(launch, plan, on_phase, slot)
        finally:
            if slot is not None and pool is not None:
                pool.finished(slot)
            elif slot is None:
                self._limiter.release_on_behalf_of(borrower)
                if self.pool is not None:
                    self.pool.poke()

    async def _run_launch(
        self, launch: Launch, plan: LaunchPlan, on_phase: PhaseReporter | None, slot: PooledContainer | None
    ) -> LaunchResult:
        await self._machinery.load(plan.role)
        from capabilities.auth import issue_capability
        from capabilities.serving import LaunchSocketApp
        from supervisor.models import ModelGateway

        log = _log.bind(launch_id=launch.id, proposal_id=launch.proposal_id, role=plan.role)
        gateway = ModelGateway(self.store.config.providers.openai, launch.id, transport=self._model_transport)
        # The model gateway (and so the operator's API key) exists only for launches that use it.
        extra_routes = [gateway.route()] if plan.uses_model else []
        grant_id: str | None = None
        rundir: LaunchRuntimeDir | None = None
        handed_over = False  # from here on the launcher records how the launch ends
        try:
            await report_phase(
                on_phase,
                "requested",
                {"launch_id": launch.id, "provider": plan.provider, "agent_id": plan.agent_id},
            )
            issued = await self.store.db.run(
                issue_capability,
                self.store,
                proposal_id=launch.proposal_id,
                role=plan.role,
                actor=_ACTOR,
                ttl_seconds=int(plan.deadline) + _GRANT_MARGIN_SECONDS,
                launch_id=launch.id,
                agent_id=plan.agent_id,
            )
            grant_id = issued.record.id
            log = log.bind(grant_id=grant_id)
            if slot is not None:  # the pooled container's directory: until now, its two FIFOs only
                rundir = slot.rundir
            else:
                rundir = await anyio.to_thread.run_sync(self.runtime.create, launch.id)
            await anyio.to_thread.run_sync(rundir.write_token_file, issued.token)
            for name, data in plan.files.items():
                await anyio.to_thread.run_sync(rundir.write_file, name, data)
            app = LaunchSocketApp(self.services, grant_id, extra_routes=extra_routes)
            async with launch_socket(app, rundir.socket_path, self._background):
                await anyio.to_thread.run_sync(rundir.grant_socket)
                await report_phase(on_phase, "channel_ready", {"launch_id": launch.id, "grant_id": grant_id})
                spec = plan.spec(launch.id, launch.proposal_id, rundir.path, issued.token)
                if self._spec_transform is not None:
                    spec = self._spec_transform(spec)

                async def phase(step: LaunchPhase) -> None:
                    if step is LaunchPhase.STOPPED:
                        await self._revoke(grant_id, "launch_stopped")
                        await note_model_failure(self.store, launch.id, gateway)
                    await report_phase(on_phase, str(step), {"launch_id": launch.id})

                handed_over = True
                claimed = None if slot is None else docker_side.Claimed(slot.container_id, slot.release)
                await self.launcher.run(spec, on_phase=phase, claimed=claimed, spawn=self._spawn)
        except BaseException as exc:
            error = unwrap_error(exc)
            if not handed_over:
                with anyio.move_on_after(_CLEANUP_SECONDS, shield=True):
                    await fail_unstarted(self.store, launch.id, error)
            if isinstance(error, RoundtableError):
                raise error from None
            if isinstance(error, Exception):
                raise LaunchFailed(f"launch {launch.id} failed: {type(error).__name__}: {error}") from error
            raise
        finally:
            with anyio.move_on_after(_CLEANUP_SECONDS, shield=True):
                if slot is not None:
                    slot.close_fds()
                if grant_id is not None:
                    await self._revoke(grant_id, "launch_ended")
                if rundir is not None:
                    await anyio.to_thread.run_sync(rundir.remove)
                if gateway.usage.requests or gateway.usage.refused:
                    await self.store.db.run(
                        self.store.launches.record_usage, launch.id, gateway.usage.to_dict()
                    )
        final = await self.store.db.run(self.store.launches.get, launch.id)
        warnings = await self.warnings_of(launch.id, launch.proposal_id)
        await report_phase(on_phase, "done", {"launch_id": launch.id, "status": str(final.status)})
        log.info("launch_done", status=str(final.status), warnings=len(warnings))
        return LaunchResult(final, warnings)

    async def _revoke(self, grant_id: str, reason: str) -> None:
        await self.store.db.run(self.store.grants.revoke, grant_id, actor=_ACTOR, reason=reason)

    async def warnings_of(self, launch_id: str, proposal_id: str) -> list[Event]:
        """The ``memory.oracle_warning`` events a launch wrote."""
        events = await self.store.db.run(
            self.store.db.read,
            lambda conn: list_events(
                conn, proposal_id=proposal_id, types=("memory.oracle_warning",), limit=10_000
            ),
        )
        return [event for event in events if event.payload.get("launch_id") == launch_id]
