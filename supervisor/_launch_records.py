"""Two records a supervisor writes about a launch outside the launcher's: the end of a launch that
never ran, and the model gateway's failure noted before the end is recorded; and the launch
machinery's imports, made in a worker thread while a pooled container gets ready."""

from __future__ import annotations

import contextlib
import importlib
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import structlog

from store.errors import RoundtableError
from store.launches import LaunchStatus

if TYPE_CHECKING:
    from store import Store
    from supervisor.models import ModelGateway

__all__ = [
    "LAUNCH_MACHINERY",
    "MachineryLoader",
    "fail_unstarted",
    "import_launch_machinery",
    "note_model_failure",
]

_log = structlog.get_logger("roundtable.supervisor")

LAUNCH_MACHINERY = ("capabilities.auth", "capabilities.services", "capabilities.serving", "supervisor.models")
"""What running a launch imports beyond the supervisor: the grants, the socket's server, the gateway."""


def import_launch_machinery(runtime_base: Path | None = None) -> None:
    """Import :data:`LAUNCH_MACHINERY` and make ready the tool schemas the roles' ``tools/list``
    answers, kept between processes in ``runtime_base`` (:mod:`supervisor._schema_cache`); a
    blocking call, for a worker thread."""
    for name in LAUNCH_MACHINERY:
        if name not in sys.modules:
            importlib.import_module(name)
    from capabilities.mcp.tools import build_registry
    from capabilities.policy import CAPABILITY_TOOLSETS
    from supervisor._schema_cache import prepare_role_schemas

    prepare_role_schemas(build_registry(), set().union(*CAPABILITY_TOOLSETS.values()), runtime_base)


class MachineryLoader:
    """Imports the launch machinery once, in one worker thread every launch waits for (two threads
    importing the same modules at once can see each other's half-made modules)."""

    def __init__(self, runtime_base: Path | None = None) -> None:
        self._loaded: anyio.Event | None = None
        self._runtime_base = runtime_base

    async def load(self) -> None:
        """Import it (:func:`import_launch_machinery`), or wait for the import under way."""
        if self._loaded is not None:
            return await self._loaded.wait()
        self._loaded = anyio.Event()
        try:  # an import that fails here fails the launch later, as itself
            with contextlib.suppress(Exception):
                await anyio.to_thread.run_sync(import_launch_machinery, self._runtime_base)
        finally:
            self._loaded.set()


async def fail_unstarted(store: Store, launch_id: str, error: BaseException) -> None:
    """Record the end of a launch that failed (or was cancelled) before its container ran."""
    cancelled = isinstance(error, anyio.get_cancelled_exc_class())
    status = LaunchStatus.CANCELLED if cancelled else LaunchStatus.FAILED
    message = error.message if isinstance(error, RoundtableError) else f"{type(error).__name__}: {error}"
    try:
        await store.db.run(
            store.launches.finish,
            launch_id,
            status,
            reason="cancelled" if cancelled else "prepare_failed",
            error=message,
        )
    except RoundtableError as exc:  # already final: nothing more to record
        _log.info("launch_already_final", launch_id=launch_id, detail=exc.message)


async def note_model_failure(store: Store, launch_id: str, gateway: ModelGateway) -> None:
    """Note the gateway's first failure on the launch before its end is recorded (see
    :mod:`supervisor._supervisor`); the launcher's end then becomes ``failed`` with that reason."""
    if gateway.failure is None:
        return
    _log.info("launch_provider_failed", launch_id=launch_id, reason=gateway.failure.reason)
    await store.db.run(
        store.launches.note_failure, launch_id, gateway.failure.reason, gateway.failure.message
    )
