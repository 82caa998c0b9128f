"""The reaper: at supervisor start, clean up after launches a previous supervisor left behind.

A supervisor killed mid-launch leaves launch rows in ``requested``, ``starting`` or ``running``, a
labelled container (created, running or stopped) and a runtime directory. :func:`reap`:

1. marks every active launch not in ``keep`` as ``failed`` with reason ``supervisor_restarted`` (one
   transaction, one ``role.failed`` event each), then calls ``on_orphan(launch_id)`` for each, so the
   capability layer revokes its grant before anything else happens;
2. force-removes every container labelled ``roundtable.supervisor=<id>`` whose ``roundtable.launch``
   label is not in ``keep``, and the recorded container of every launch failed in step 1 (which finds
   it even if the project moved and its supervisor id changed);
3. removes the runtime directories of launches not in ``keep``.

A warm pool's container (label ``roundtable.pool=<owner>``) names a pool slot, not a launch: it and
its runtime directory are kept while its owner lives (``live_owners`` says which owners do: their
lock is held), and removed otherwise, claimed or not, like any launch of a dead supervisor.

``keep`` is the set of launches running in this process (:attr:`DockerLauncher.running`); at start it
is empty. The reaper assumes one supervisor per project: a second supervisor started on the same
project would reap the first one's launches.

An unreachable engine does not stop steps 1 and 3; the report says what could not be done.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass

import anyio.to_thread
import structlog

from store.errors import RoundtableError
from store.launches import LaunchStore
from supervisor.docker._client import DockerClient
from supervisor.launch import LABEL_LAUNCH, LABEL_POOL, LABEL_SUPERVISOR, RuntimeRoot

__all__ = ["OrphanHook", "ReapReport", "reap"]

_log = structlog.get_logger("roundtable.reaper")

OrphanHook = Callable[[str], Awaitable[None] | None]
"""Called with the id of each launch the reaper failed (to revoke its grant); sync or async."""


@dataclass(frozen=True)
class ReapReport:
    """What a reaper run did; ``warnings`` lists what it could not do."""

    failed_launches: tuple[str, ...]
    removed_containers: tuple[str, ...]
    removed_runtime_dirs: tuple[str, ...]
    warnings: tuple[str, ...] = ()

    @property
    def complete(self) -> bool:
        """Whether everything that needed cleaning was cleaned."""
        return not self.warnings


async def reap(
    docker: DockerClient,
    launches: LaunchStore,
    *,
    supervisor_id: str,
    keep: Collection[str] = (),
    on_orphan: OrphanHook | None = None,
    runtime: RuntimeRoot | None = None,
    live_owners: Callable[[Collection[str]], Collection[str]] | None = None,
) -> ReapReport:
    """Fail orphaned launches, then remove their containers and runtime directories (module docstring)."""
    kept = frozenset(keep)
    warnings: list[str] = []

    orphans = await launches.db.run(launches.fail_orphans, keep=kept, reason="supervisor_restarted")
    for launch in orphans:
        _log.warning("launch_orphaned", launch_id=launch.id, status_was="active")
        if on_orphan is not None:
            try:
                result = on_orphan(launch.id)
                if inspect.isawaitable(result):
                    await result
            except Exception as exc:
                warnings.append(f"on_orphan({launch.id}) failed: {exc}")
                _log.error("orphan_hook_failed", launch_id=launch.id, error=str(exc))

    removed: list[str] = []
    try:
        labelled = await docker.list_labelled(f"{LABEL_SUPERVISOR}={supervisor_id}")
        pool_owners = {c.labels[LABEL_POOL] for c in labelled if c.labels.get(LABEL_POOL)}
        alive = set(await anyio.to_thread.run_sync(live_owners, pool_owners)) if live_owners else set()
        pooled = {
            c.labels[LABEL_LAUNCH]
            for c in labelled
            if c.labels.get(LABEL_POOL) in alive and LABEL_LAUNCH in c.labels
        }
        kept |= pooled
        targets = {c.id: c.name for c in labelled if c.labels.get(LABEL_LAUNCH) not in kept}
        for launch in orphans:
            if launch.container_id is not None and launch.container_id not in targets:
                targets[launch.container_id] = launch.container_id[:12]
        for container_id, name in sorted(targets.items()):
            try:
                if await docker.remove(container_id):
                    removed.append(container_id)
                    _log.warning("container_reaped", container_id=container_id[:12], name=name)
            except RoundtableError as exc:
                warnings.append(f"could not remove container {name}: {exc.message}")
    except RoundtableError as exc:
        warnings.append(f"could not list containers: {exc.message}")

    swept: list[str] = []
    if runtime is not None:
        try:
            swept = await anyio.to_thread.run_sync(runtime.sweep, kept)
        except (OSError, RoundtableError) as exc:
            warnings.append(f"could not sweep {runtime.path}: {exc}")

    return ReapReport(
        failed_launches=tuple(launch.id for launch in orphans),
        removed_containers=tuple(removed),
        removed_runtime_dirs=tuple(swept),
        warnings=tuple(warnings),
    )
