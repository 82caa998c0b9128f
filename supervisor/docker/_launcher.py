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

from store.errors import Conflict, LaunchFailed, RoundtableError
from store.launches import MAX_LOG_TAIL_BYTES, Launch, LaunchStatus, LaunchStore, bounded_tail
from supervisor.docker._client import DockerClient
from supervisor.docker._hooks import Claimed, PhaseHook, Spawn, call_hook, call_hook_quietly, failure_reason
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
_REDACTED = "[redacted]"


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


class DockerLauncher:
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
        self.launches = launches
        self.supervisor_id = supervisor_id
        self.docker = docker or DockerClient()
        self.runtime = runtime
        self.cleanup_seconds = cleanup_seconds
        self.log_bytes = log_bytes
        self.ownership = ownership
        self._running: set[str] = set()

    @property
    def running(self) -> frozenset[str]:
        """Launch ids this launcher is running now (the reaper leaves them alone)."""
        return frozenset(self._running)

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
        launch = await self._store(self.launches.get, spec.launch_id)
        self._check_matches(spec, launch)
        self._running.add(spec.launch_id)
        try:
            return await self._run(_Attempt(spec, claimed=claimed, spawn=spawn), on_phase)
        finally:
            self._running.discard(spec.launch_id)

    def _check_matches(self, spec: LaunchSpec, launch: Launch) -> None:
        if launch.status is not LaunchStatus.REQUESTED or spec.launch_id in self._running:
            raise Conflict(f"launch {spec.launch_id} is {launch.status}; only a requested launch can run")
        recorded = (launch.role, launch.proposal_id, launch.image)
        if recorded != (spec.role, spec.proposal_id, spec.image):
            raise Conflict(f"the spec of {spec.launch_id} does not match its record {recorded}")

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
        except anyio.get_cancelled_exc_class():
            log.warning("launch_cancelled", stage=attempt.stage)
            with anyio.move_on_after(self.cleanup_seconds, shield=True):
                await self._abort(attempt, LaunchStatus.CANCELLED, "cancelled", None, on_phase)
            raise
        except Exception as exc:
            error = exc if isinstance(exc, RoundtableError) else LaunchFailed(f"{attempt.stage}: {exc}")
            reason = failure_reason(attempt.stage, error)
            log.error("launch_failed", stage=attempt.stage, error=error.message)
            with anyio.move_on_after(self.cleanup_seconds, shield=True):
                await self._abort(attempt, LaunchStatus.FAILED, reason, error.message, on_phase)
            if error is exc:
                raise
            raise error from exc

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
        if attempt.timed_out:
            status, reason = LaunchStatus.TIMEOUT, "deadline_exceeded"
        elif oom:
            status, reason = LaunchStatus.FAILED, "oom"
        elif exit_code == 0:
            status, reason = LaunchStatus.EXITED, None
        else:
            status, reason = LaunchStatus.FAILED, "nonzero_exit"
        await self._store(
            self.launches.finish,
            spec.launch_id,
            status,
            exit_code=exit_code,
            reason=reason,
            log_tail=log_tail,
        )
        _log.info("launch_ended", launch_id=spec.launch_id, status=str(status), exit_code=exit_code, oom=oom)
        if attempt.spawn is not None:
            attempt.spawn(partial(self._remove_quietly, container_id))
        await call_hook_quietly(on_phase, LaunchPhase.ENDED, spec.launch_id)  # the record is final already
        return ContainerOutcome(
            launch_id=spec.launch_id,
            status=status,
            exit_code=exit_code,
            reason=reason,
            oom_killed=oom,
            container_id=container_id,
            log_tail=log_tail,
            seconds=time.monotonic() - attempt.started,
            warnings=tuple(warnings),
        )

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
        await call_hook_quietly(on_phase, LaunchPhase.STOPPED, spec.launch_id)
        try:
            await self._store(
                self.launches.finish, spec.launch_id, status, reason=reason, error=error, log_tail=log_tail
            )
        except RoundtableError as exc:  # e.g. already final when only the last hook failed
            _log.error("launch_record_failed", launch_id=spec.launch_id, error=exc.message)
        await call_hook_quietly(on_phase, LaunchPhase.ENDED, spec.launch_id)
        for warning in warnings:
            _log.warning("cleanup_incomplete", launch_id=spec.launch_id, detail=warning)

    async def _log_tail(self, container: str, spec: LaunchSpec, warnings: list[str]) -> str:
        # Read a little more than we keep, so a secret cut at the edge is still whole when redacted.
        margin = max((len(secret.encode()) for secret in spec.redact), default=0)
        try:
            raw = await self.docker.logs(
                container, max_bytes=self.log_bytes + margin, tail_lines=_LOG_TAIL_LINES
            )
        except RoundtableError as exc:
            warnings.append(f"could not read the logs: {exc.message}")
            return ""
        text = raw.decode("utf-8", errors="replace")
        for secret in sorted(spec.redact, key=len, reverse=True):
            if secret:
                text = text.replace(secret, _REDACTED)
        return bounded_tail(text, self.log_bytes)

    async def _remove_quietly(self, container: str) -> None:
        """A background removal: what fails is logged, and the reaper finishes it at the next start."""
        warnings: list[str] = []
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
