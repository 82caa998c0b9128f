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


def import_launch_machinery(runtime_base: Path | None = None, role: str | None = None) -> None:
    """Import :data:`LAUNCH_MACHINERY` and make ready the tool schemas launch role ``role``'s
    ``tools/list`` answers (every launch role's: None), kept between processes in ``runtime_base``
    (:mod:`supervisor._schema_cache`); a blocking call, for a worker thread. Only those tools'
    modules are imported (:meth:`~capabilities.mcp.ToolRegistry.lazy`)."""
    for name in LAUNCH_MACHINERY:
        if name not in sys.modules:
            importlib.import_module(name)
    from capabilities.mcp.tools import build_registry
    from capabilities.policy import CAPABILITY_TOOLSETS
    from supervisor._schema_cache import prepare_role_schemas

    toolsets = [CAPABILITY_TOOLSETS[role]] if role in CAPABILITY_TOOLSETS else CAPABILITY_TOOLSETS.values()
    prepare_role_schemas(build_registry(), set().union(*toolsets), runtime_base)


class MachineryLoader:
    """Imports the launch machinery once, and makes each launch role's tool schemas ready once, in
    one worker thread at a time that every launch of the role waits for (two threads importing the
    same modules at once can see each other's half-made modules)."""

    def __init__(self, runtime_base: Path | None = None) -> None:
        self._ready: dict[str | None, anyio.Event] = {}
        self._turn: anyio.Lock | None = None
        self._runtime_base = runtime_base

    async def load(self, role: str | None = None) -> None:
        """Import it for launch role ``role`` (:func:`import_launch_machinery`), or wait for that
        load under way."""
        ready = self._ready.get(role)
        if ready is not None:
            return await ready.wait()
        ready = self._ready[role] = anyio.Event()
        self._turn = self._turn or anyio.Lock()
        done = False
        try:
            async with self._turn:
                # An import that fails here fails the launch later, as itself.
                with contextlib.suppress(Exception):
                    await anyio.to_thread.run_sync(import_launch_machinery, self._runtime_base, role)
                done = True
        finally:
            if not done:  # cancelled before its turn: the role's next launch loads it
                del self._ready[role]
            ready.set()


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
