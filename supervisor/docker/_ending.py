"""The bookkeeping every launcher shares, whatever runs the role (a container, a Pod): checking that a
launch may run, recording its end, and the clean-up after a failure or a cancellation."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Collection
from typing import Any, NoReturn

import anyio
import structlog

from store.errors import Conflict, LaunchFailed, RoundtableError
from store.launches import Launch, LaunchStatus, LaunchStore
from supervisor.docker._hooks import PhaseHook, call_hook_quietly, failure_reason
from supervisor.launch import ContainerOutcome, LaunchPhase, LaunchSpec

__all__ = ["Abort", "RunningLaunches", "check_requested", "record_abort", "record_end", "recover"]

_log = structlog.get_logger("roundtable.launcher")
_HOLD_SECONDS = 30.0
_HOLD_AT_MOST = 32

Abort = Callable[[LaunchStatus, str, "str | None"], Awaitable[None]]
"""Cleans up after a launch that could not finish and records ``(status, reason, error)``."""


class RunningLaunches:
    """The launches a launcher runs now: each checked (:func:`check_requested`), counted while it runs,
    and the background clean-up that waits for them (:meth:`after_running_launches`)."""

    def __init__(
        self, launches: LaunchStore, *, supervisor_id: str, cleanup_seconds: float, log_bytes: int
    ) -> None:
        self.launches = launches
        self.supervisor_id = supervisor_id
        self.cleanup_seconds = cleanup_seconds
        self.log_bytes = log_bytes
        self._running: set[str] = set()
        self._left: anyio.Event | None = None
        """Set (and dropped) each time a launch stops running, for the clean-up that waits."""
        self._held = 0

    @property
    def running(self) -> frozenset[str]:
        """Launch ids this launcher is running now (the reaper leaves them alone)."""
        return frozenset(self._running)

    async def _tracked(
        self, spec: LaunchSpec, body: Callable[[], Awaitable[ContainerOutcome]]
    ) -> ContainerOutcome:
        """Run ``body`` for the recorded launch ``spec`` once it is checked, counted as running."""
        launch = await self.launches.db.run(self.launches.get, spec.launch_id)
        check_requested(spec, launch, self._running)
        self._running.add(spec.launch_id)
        try:
            return await body()
        finally:
            self._running.discard(spec.launch_id)
            if self._left is not None:
                self._left.set()
                self._left = None

    async def after_running_launches(self) -> None:
        """Wait until no launch of this launcher runs: a background clean-up step (removing an ended
        launch's container) waits here, for it is the engine's CPU that running launches need, and
        the next quiet moment does it as well. At most ``_HOLD_AT_MOST`` steps wait, none longer
        than ``_HOLD_SECONDS``: under a steady load they go on all the same."""
        if not self._running or self._held >= _HOLD_AT_MOST:
            return
        self._held += 1
        try:
            with anyio.move_on_after(_HOLD_SECONDS):
                while self._running:
                    if self._left is None:
                        self._left = anyio.Event()
                    await self._left.wait()
        finally:
            self._held -= 1


def check_requested(spec: LaunchSpec, launch: Launch, running: Collection[str]) -> None:
    """:class:`Conflict` unless ``launch`` is ``requested``, not running, and recorded as ``spec`` says."""
    if launch.status is not LaunchStatus.REQUESTED or spec.launch_id in running:
        raise Conflict(f"launch {spec.launch_id} is {launch.status}; only a requested launch can run")
    recorded = (launch.role, launch.proposal_id, launch.image)
    if recorded != (spec.role, spec.proposal_id, spec.image):
        raise Conflict(f"the spec of {spec.launch_id} does not match its record {recorded}")


async def record_end(
    launches: LaunchStore,
    spec: LaunchSpec,
    outcome: dict[str, Any],
    *,
    started: float,
    warnings: list[str],
    on_phase: PhaseHook | None,
    recorded: Callable[[], object] | None = None,
) -> ContainerOutcome:
    """Record the end ``outcome`` (``status``, ``reason``, ``exit_code``, ``oom``, ``container_id``,
    ``log_tail``) of a launch that ran; ``recorded`` runs once it is final, before the ENDED hook."""
    status, reason, exit_code = outcome["status"], outcome["reason"], outcome["exit_code"]
    await launches.db.run(
        launches.finish,
        spec.launch_id,
        status,
        exit_code=exit_code,
        reason=reason,
        log_tail=outcome["log_tail"],
    )
    _log.info(
        "launch_ended", launch_id=spec.launch_id, status=str(status), exit_code=exit_code, oom=outcome["oom"]
    )
    if recorded is not None:
        recorded()
    await call_hook_quietly(on_phase, LaunchPhase.ENDED, spec.launch_id)  # the record is final already
    return ContainerOutcome(
        launch_id=spec.launch_id,
        status=status,
        exit_code=exit_code,
        reason=reason,
        oom_killed=outcome["oom"],
        container_id=outcome["container_id"],
        log_tail=outcome["log_tail"],
        seconds=time.monotonic() - started,
        warnings=tuple(warnings),
    )


async def record_abort(
    launches: LaunchStore,
    spec: LaunchSpec,
    end: tuple[LaunchStatus, str, str | None],
    *,
    log_tail: str | None,
    warnings: list[str],
    on_phase: PhaseHook | None,
) -> None:
    """After the clean-up of a launch that could not finish: the STOPPED hook, the record of ``end``
    (status, reason, error), the ENDED hook, and what the clean-up could not do, logged; never raises."""
    status, reason, error = end
    await call_hook_quietly(on_phase, LaunchPhase.STOPPED, spec.launch_id)
    try:
        await launches.db.run(
            launches.finish, spec.launch_id, status, reason=reason, error=error, log_tail=log_tail
        )
    except RoundtableError as exc:  # e.g. already final when only the last hook failed
        _log.error("launch_record_failed", launch_id=spec.launch_id, error=exc.message)
    await call_hook_quietly(on_phase, LaunchPhase.ENDED, spec.launch_id)
    for warning in warnings:
        _log.warning("cleanup_incomplete", launch_id=spec.launch_id, detail=warning)


async def recover(
    exc: BaseException, *, stage: str, abort: Abort, cleanup_seconds: float, log: Any
) -> NoReturn:
    """Clean up after ``exc`` escaped a launch at ``stage`` (shielded, within ``cleanup_seconds``) and
    raise: a cancellation as it is (``cancelled``), a :class:`RoundtableError` as it is, anything else
    as :class:`LaunchFailed` (``failed``, the reason :func:`failure_reason` gives)."""
    if isinstance(exc, anyio.get_cancelled_exc_class()):
        log.warning("launch_cancelled", stage=stage)
        with anyio.move_on_after(cleanup_seconds, shield=True):
            await abort(LaunchStatus.CANCELLED, "cancelled", None)
        raise exc
    if not isinstance(exc, Exception):
        raise exc
    error = exc if isinstance(exc, RoundtableError) else LaunchFailed(f"{stage}: {exc}")
    log.error("launch_failed", stage=stage, error=error.message)
    with anyio.move_on_after(cleanup_seconds, shield=True):
        await abort(LaunchStatus.FAILED, failure_reason(stage, error), error.message)
    if error is exc:
        raise exc
    raise error from exc
