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

``keep`` is the set of launches running in this process (:attr:`DockerLauncher.running`) and the
launches of other live owners (the supervisor passes them).

**Supervisors on several hosts** (a PostgreSQL store, owners holding leases, ``leases`` given): step 1
is :meth:`~store.launches.LeaseStore.reap_expired` instead -- it fails only launches whose owner's
lease expired (reason ``owner_lease_expired``) and revokes their grants in the same transaction,
whatever engine they ran on, since grants live in the store. Containers are another matter:
:func:`reap_expired_owners` removes an orphan's containers (its recorded one and any labelled with
its launch id) and an expired owner's warm-pool containers only when that owner's lease names this
supervisor's own engine (``docker info`` ID); the others are left to the supervisor on their engine,
whose start-up sweep of its labelled containers removes them. A long-running supervisor calls it
every heartbeat (``Supervisor.warm``), so a dead peer's launches are reaped about one ttl after its
last heartbeat.

An unreachable engine does not stop steps 1 and 3; the report says what could not be done.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Collection, Iterable
from dataclasses import dataclass

import anyio.to_thread
import structlog

from store.errors import RoundtableError
from store.launches import LaunchStore, LeaseStore
from supervisor.docker._client import DockerClient
from supervisor.launch import LABEL_LAUNCH, LABEL_POOL, LABEL_SUPERVISOR, OwnerLease, Ownership, RuntimeRoot

__all__ = [
    "OrphanHook",
    "ReapReport",
    "notify_orphans",
    "reap",
    "reap_expired_owners",
    "take_ownership",
    "watch_expired_owners",
]

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


async def _remove_all(
    docker: DockerClient, targets: dict[str, str], removed: list[str], warnings: list[str]
) -> None:
    for container_id, name in sorted(targets.items()):
        try:
            if await docker.remove(container_id):
                removed.append(container_id)
                _log.warning("container_reaped", container_id=container_id[:12], name=name)
        except RoundtableError as exc:
            warnings.append(f"could not remove container {name}: {exc.message}")


async def reap_expired_owners(
    docker: DockerClient, leases: LeaseStore, *, owner: str, engine: str
) -> ReapReport:
    """Fail the launches of owners whose lease expired and revoke their grants (any engine); remove
    their containers and warm-pool containers on this engine only (module docstring)."""
    reaped = await leases.db.run(leases.reap_expired, keep={owner})
    warnings: list[str] = []
    targets: dict[str, str] = {}
    labels: list[str] = []
    for orphan in reaped.orphans:
        launch = orphan.launch
        _log.warning("launch_orphaned", launch_id=launch.id, owner=launch.owner, engine=orphan.engine)
        if not engine or orphan.engine != engine:
            if launch.container_id is not None:
                warnings.append(
                    f"launch {launch.id} ran on engine {orphan.engine or '(unknown)'}, not this one"
                    f" ({engine or 'unknown'}): its container is left to that engine's supervisor"
                )
            continue
        if launch.container_id is not None:
            targets[launch.container_id] = launch.container_id[:12]
        labels.append(f"{LABEL_LAUNCH}={launch.id}")
    labels += [f"{LABEL_POOL}={lease.owner}" for lease in reaped.expired if engine and lease.engine == engine]
    removed: list[str] = []
    try:
        for label in labels:
            targets.update({c.id: c.name for c in await docker.list_labelled(label)})
        await _remove_all(docker, targets, removed, warnings)
    except RoundtableError as exc:
        warnings.append(f"could not list containers: {exc.message}")
    return ReapReport(
        failed_launches=tuple(orphan.launch.id for orphan in reaped.orphans),
        removed_containers=tuple(removed),
        removed_runtime_dirs=(),
        warnings=tuple(warnings),
    )


async def notify_orphans(
    launch_ids: Iterable[str], on_orphan: OrphanHook | None, warnings: list[str], **context: str
) -> None:
    """Log each orphaned launch and call ``on_orphan`` with its ID (a plain or an async hook); a
    failing hook becomes one of ``warnings``, never the reap's own failure."""
    for launch_id in launch_ids:
        _log.warning("launch_orphaned", launch_id=launch_id, **context)
        if on_orphan is None:
            continue
        try:
            result = on_orphan(launch_id)
            if inspect.isawaitable(result):
                await result
        except Exception as exc:
            warnings.append(f"on_orphan({launch_id}) failed: {exc}")
            _log.error("orphan_hook_failed", launch_id=launch_id, error=str(exc))


async def reap(
    docker: DockerClient,
    launches: LaunchStore,
    *,
    supervisor_id: str,
    keep: Collection[str] = (),
    on_orphan: OrphanHook | None = None,
    runtime: RuntimeRoot | None = None,
    live_owners: Callable[[Collection[str]], Collection[str]] | None = None,
    leases: LeaseStore | None = None,
    owner: str = "",
    engine: str = "",
) -> ReapReport:
    """Fail orphaned launches, then remove their containers and runtime directories (module docstring)."""
    kept = frozenset(keep)
    warnings: list[str] = []
    removed: list[str] = []
    failed: tuple[str, ...] = ()

    orphans = []
    if leases is not None:
        expired = await reap_expired_owners(docker, leases, owner=owner, engine=engine)
        failed, removed, warnings = (
            expired.failed_launches,
            list(expired.removed_containers),
            [*expired.warnings],
        )
    else:
        orphans = await launches.db.run(launches.fail_orphans, keep=kept, reason="supervisor_restarted")
        failed = tuple(launch.id for launch in orphans)
    await notify_orphans([launch.id for launch in orphans], on_orphan, warnings, status_was="active")

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
        targets = {cid: name for cid, name in targets.items() if cid not in removed}
        await _remove_all(docker, targets, removed, warnings)
    except RoundtableError as exc:
        warnings.append(f"could not list containers: {exc.message}")

    swept: list[str] = []
    if runtime is not None:
        try:
            swept = await anyio.to_thread.run_sync(runtime.sweep, kept)
        except (OSError, RoundtableError) as exc:
            warnings.append(f"could not sweep {runtime.path}: {exc}")

    return ReapReport(
        failed_launches=failed,
        removed_containers=tuple(removed),
        removed_runtime_dirs=tuple(swept),
        warnings=tuple(warnings),
    )


async def take_ownership(owner: Ownership, docker: DockerClient | None) -> None:
    """Take the supervisor's lock or lease; a lease first learns the engine's ID ("" when the engine
    does not answer: then no other supervisor removes this one's containers, its own restart does)."""
    if isinstance(owner, OwnerLease) and docker is not None:
        try:
            owner.engine = await docker.engine_id()
        except RoundtableError as exc:
            _log.warning("engine_id_unknown", error=exc.message)
    await anyio.to_thread.run_sync(owner.acquire)


async def watch_expired_owners(launcher: object, lease: Ownership, scope: anyio.CancelScope) -> None:
    """Reap the launches of peers whose lease expired, every heartbeat interval, until ``scope`` is
    cancelled (with a lease and a Docker launcher; else it returns at once)."""
    docker = getattr(launcher, "docker", None)
    if not isinstance(lease, OwnerLease) or not isinstance(docker, DockerClient):
        return
    with scope:
        await _watch(docker, lease)


async def _watch(docker: DockerClient, lease: OwnerLease) -> None:
    while True:
        await anyio.sleep(lease.interval)  # a period, not a wait for something
        try:
            report = await reap_expired_owners(docker, lease.leases, owner=lease.name, engine=lease.engine)
        except RoundtableError as exc:  # the store did not answer: the next round tries again
            _log.warning("lease_reap_failed", error=exc.message)
            continue
        if report.failed_launches or report.removed_containers:
            _log.warning("expired_owners_reaped", report=str(report))
