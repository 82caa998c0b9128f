"""The hardened Docker launcher: one recorded launch, from container creation to its removal.

:meth:`DockerLauncher.run` takes a launch the store has already recorded as ``requested`` and:

1. creates the container with every hardening measure (:func:`~supervisor.launch_spec.container_kwargs`);
2. commits the container id (``starting``) *before* starting it, so that a crash between the two
   leaves a row and a labelled container the reaper can find;
3. starts it (``running``) and waits for it with a deadline; past the deadline it is killed
   (``timeout``);
4. reads its state (exit status, ``OOMKilled``) and a bounded tail of its logs, with the strings of
   ``spec.redact`` cut out;
5. removes the container and records the end: ``exited`` (0), ``failed`` (``nonzero_exit``, ``oom``)
   or ``timeout``, each with its event.

Whatever goes wrong after step 1 (an engine error, a failing hook, the awaiting task being
cancelled), a shielded, time-bounded clean-up removes the container, stores what it can and records
``failed`` or ``cancelled`` before the error propagates. The ``on_phase`` hook reports progress; the
supervisor revokes the launch's grant at :attr:`LaunchPhase.STOPPED` (or in its own ``finally``) and
closes the socket. Grants, sockets and tokens are not the launcher's business: it never sees a token
except as a string to redact.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from functools import partial
from typing import Any, ParamSpec, Protocol, TypeVar

import anyio
import structlog

from store.errors import LaunchFailed, RoundtableError
from store.launches import MAX_LOG_TAIL_BYTES, LaunchStatus, LaunchStore
from supervisor.docker._client import DockerClient
from supervisor.docker._ending import RunningLaunches, record_abort, record_end, recover
from supervisor.docker._hooks import Claimed, PhaseHook, Spawn, call_hook
from supervisor.docker._reaper import OrphanHook, ReapReport, reap
from supervisor.launch import (
    ContainerOutcome,
    LaunchLimits,
    LaunchPhase,
    LaunchSpec,
    OwnerLease,
    Ownership,
    RuntimeRoot,
    container_kwargs,
    container_name,
    end_status,
    redacted_tail,
    tail_margin,
)

__all__ = [
    "Claimed",
    "ContainerOutcome",
    "DockerLauncher",
    "LaunchLimits",
    "LaunchPhase",
    "LaunchSpec",
    "Launcher",
    "PhaseHook",
]

_T = TypeVar("_T")
_P = ParamSpec("_P")
_log = structlog.get_logger("roundtable.launcher")

_KILL_GRACE_SECONDS = 15.0
_LOG_TAIL_LINES = 2_000


class Launcher(Protocol):
    """What the supervisor needs from a container launcher (Docker today, a cluster later)."""

    async def run(
        self,
        spec: LaunchSpec,
        *,
        on_phase: PhaseHook | None = None,
        claimed: Claimed | None = None,
        spawn: Spawn | None = None,
    ) -> ContainerOutcome:
        """Run one recorded launch to its end; see :meth:`DockerLauncher.run`."""
        ...

    async def reap(self, *, on_orphan: OrphanHook | None = None, keep: Collection[str] = ()) -> ReapReport:
        """Clean up after launches of a previous supervisor; see :func:`supervisor.docker._reaper.reap`."""
        ...


@dataclass
class _Attempt:
    """What one run has done so far, for its clean-up."""

    spec: LaunchSpec
    started: float = field(default_factory=time.monotonic)
    stage: str = "prepare"
    create_attempted: bool = False
    container_id: str | None = None
    timed_out: bool = False
    claimed: Claimed | None = None
    spawn: Spawn | None = None


class DockerLauncher(RunningLaunches):
    """Runs role containers on the local Docker engine and records every launch.

    ``supervisor_id`` labels every container (see :func:`~supervisor.launch_spec.supervisor_id_for`);
    ``runtime`` is where per-launch directories live, swept by :meth:`reap`.
    """

    def __init__(
        self,
        launches: LaunchStore,
        *,
        supervisor_id: str,
        docker: DockerClient | None = None,
        runtime: RuntimeRoot | None = None,
        cleanup_seconds: float = 60.0,
        log_bytes: int = MAX_LOG_TAIL_BYTES,
        ownership: Ownership | None = None,
    ):
        """``ownership`` is the supervisor's lock or lease: the reaper keeps a warm pool's containers
        whose owner still lives (without it, it keeps none), and with a lease it reaps by lease
        expiry and only this engine's containers (:mod:`supervisor.docker._reaper`)."""
        super().__init__(
            launches, supervisor_id=supervisor_id, cleanup_seconds=cleanup_seconds, log_bytes=log_bytes
        )
        self.docker = docker or DockerClient()
        self.runtime = runtime
        self.ownership = ownership

    async def aclose(self) -> None:
        """Close the engine connection."""
        await self.docker.aclose()

    async def _store(self, fn: Callable[_P, _T], *args: _P.args, **kwargs: _P.kwargs) -> _T:
        return await self.launches.db.run(fn, *args, **kwargs)

    # -- run -----------------------------------------------------------------------------------------

    async def run(
        self,
        spec: LaunchSpec,
        *,
        on_phase: PhaseHook | None = None,
        claimed: Claimed | None = None,
        spawn: Spawn | None = None,
    ) -> ContainerOutcome:
        """Run the recorded launch ``spec.launch_id`` to its end and return how it ended.

        With ``claimed``, the launch takes over that started container (a warm pool's, created with
        the same hardening) instead of creating one, and lets it go with ``claimed.release()`` where
        it would start it. With ``spawn``, the container's removal runs in the background once the
        end is recorded (the reaper removes it if the process dies first), so the outcome comes back
        as soon as the container has stopped.

        A container that ran returns an outcome whatever its exit (``exited``, ``failed``, ``timeout``).
        A launch that could not run raises after recording ``failed``: :class:`DockerUnavailable` when
        the engine is unreachable, :class:`LaunchFailed` otherwise. Cancelling the awaiting task kills
        and removes the container, records ``cancelled`` and re-raises the cancellation. A launch that
        is not ``requested``, or whose record names another role, proposal or image, is a
        :class:`Conflict` and is left untouched.
        """
        return await self._tracked(
            spec, partial(self._run, _Attempt(spec, claimed=claimed, spawn=spawn), on_phase)
        )

    async def _run(self, attempt: _Attempt, on_phase: PhaseHook | None) -> ContainerOutcome:
        spec = attempt.spec
        log = _log.bind(launch_id=spec.launch_id, proposal_id=spec.proposal_id, role=spec.role)
        try:
            if spec.runtime_dir is not None and not spec.runtime_dir.is_dir():
                raise LaunchFailed(f"the runtime directory {spec.runtime_dir} does not exist")
            await call_hook(on_phase, LaunchPhase.CREATING)
            if attempt.claimed is None:
                kwargs = container_kwargs(spec, self.supervisor_id)
                attempt.stage, attempt.create_attempted = "create", True
                attempt.container_id = await self.docker.create(kwargs)
            else:
                attempt.container_id = attempt.claimed.container_id
            attempt.stage = "record"
            await self._store(self.launches.mark_starting, spec.launch_id, attempt.container_id)
            log.info("container_created", container_id=attempt.container_id[:12])
            await call_hook(on_phase, LaunchPhase.CREATED)
            attempt.stage = "start"
            if attempt.claimed is None:
                await self.docker.start(attempt.container_id)
            else:
                await attempt.claimed.release()
            await self._store(self.launches.mark_running, spec.launch_id)
            await call_hook(on_phase, LaunchPhase.RUNNING)
            attempt.stage = "wait"
            exit_code = await self.docker.wait(attempt.container_id, spec.timeout_seconds)
            if exit_code is None:
                attempt.timed_out = True
                log.warning("deadline_exceeded", timeout_seconds=spec.timeout_seconds)
                await self.docker.kill(attempt.container_id)
                exit_code = await self.docker.wait(attempt.container_id, _KILL_GRACE_SECONDS)
            attempt.stage = "finish"
            # The container has stopped: finish the bookkeeping even if the caller is being cancelled.
            with anyio.move_on_after(self.cleanup_seconds, shield=True):
                return await self._finish(attempt, exit_code, on_phase)
            raise LaunchFailed(f"recording the end of {spec.launch_id} took over {self.cleanup_seconds}s")
        except BaseException as exc:
            abort = partial(self._abort, attempt, on_phase=on_phase)
            await recover(
                exc, stage=attempt.stage, abort=abort, cleanup_seconds=self.cleanup_seconds, log=log
            )

    async def _finish(
        self, attempt: _Attempt, exit_code: int | None, on_phase: PhaseHook | None
    ) -> ContainerOutcome:
        spec, container_id = attempt.spec, attempt.container_id
        assert container_id is not None
        warnings: list[str] = []
        await call_hook(on_phase, LaunchPhase.STOPPED)
        oom = False
        try:
            state: dict[str, Any] = (await self.docker.inspect(container_id)).get("State") or {}
            oom = bool(state.get("OOMKilled"))
            exit_code = int(state["ExitCode"]) if state.get("ExitCode") is not None else exit_code
        except RoundtableError as exc:
            warnings.append(f"could not inspect the container: {exc.message}")
        log_tail = await self._log_tail(container_id, spec, warnings)
        if attempt.spawn is None:
            await self._remove(container_id, warnings)
        status, reason = end_status(timed_out=attempt.timed_out, oom=oom, exit_code=exit_code)
        spawn = attempt.spawn
        return await record_end(
            self.launches,
            spec,
            {"status": status, "reason": reason, "exit_code": exit_code, "oom": oom,
             "container_id": container_id, "log_tail": log_tail},
            started=attempt.started,
            warnings=warnings,
            on_phase=on_phase,
            recorded=None if spawn is None else lambda: spawn(partial(self._remove_quietly, container_id)),
        )  # fmt: skip

    async def _abort(
        self,
        attempt: _Attempt,
        status: LaunchStatus,
        reason: str,
        error: str | None,
        on_phase: PhaseHook | None,
    ) -> None:
        """Remove whatever container exists and record ``status``; never raises (it logs instead)."""
        spec, warnings = attempt.spec, list[str]()
        # Removing by name also finds a container whose create answer never reached us.
        target = attempt.container_id or (
            container_name(spec.launch_id) if attempt.create_attempted else None
        )
        log_tail = None
        if target is not None:
            if attempt.container_id is not None and attempt.stage in ("wait", "finish"):
                log_tail = await self._log_tail(target, spec, warnings)
            await self._remove(target, warnings)
        end = (status, reason, error)
        await record_abort(self.launches, spec, end, log_tail=log_tail, warnings=warnings, on_phase=on_phase)

    async def _log_tail(self, container: str, spec: LaunchSpec, warnings: list[str]) -> str:
        # Read a little more than we keep, so a secret cut at the edge is still whole when redacted.
        margin = tail_margin(spec.redact)
        try:
            raw = await self.docker.logs(
                container, max_bytes=self.log_bytes + margin, tail_lines=_LOG_TAIL_LINES
            )
        except RoundtableError as exc:
            warnings.append(f"could not read the logs: {exc.message}")
            return ""
        return redacted_tail(raw, spec.redact, self.log_bytes)

    async def _remove_quietly(self, container: str) -> None:
        """A background removal, once no other launch runs (:meth:`after_running_launches`; at once
        if cancelled meanwhile): what fails is logged, and the reaper finishes it at the next start."""
        warnings: list[str] = []
        try:
            await self.after_running_launches()
        finally:
            with anyio.CancelScope(shield=True), anyio.move_on_after(self.cleanup_seconds):
                await self._remove(container, warnings)
            for warning in warnings:
                _log.warning("cleanup_incomplete", container_id=container[:12], detail=warning)

    async def _remove(self, container: str, warnings: list[str]) -> None:
        try:
            await self.docker.remove(container)
        except RoundtableError as exc:
            warnings.append(f"could not remove container {container[:12]} (the reaper will): {exc.message}")

    # -- reap ----------------------------------------------------------------------------------------

    async def reap(self, *, on_orphan: OrphanHook | None = None, keep: Collection[str] = ()) -> ReapReport:
        """Remove this supervisor's containers and runtime directories that no running launch owns,
        and fail the launches a previous supervisor left active (see :func:`supervisor.docker._reaper.reap`).

        ``keep`` names launches another live supervisor process runs: they are left alone."""
        return await reap(
            self.docker,
            self.launches,
            supervisor_id=self.supervisor_id,
            keep=self.running | frozenset(keep),
            on_orphan=on_orphan,
            runtime=self.runtime,
            live_owners=None if self.ownership is None else self.ownership.live,
            **self._lease_scope(),
        )

    def _lease_scope(self) -> dict[str, Any]:
        lease = self.ownership
        if not isinstance(lease, OwnerLease):
            return {}
        return {"leases": lease.leases, "owner": lease.name, "engine": lease.engine}
