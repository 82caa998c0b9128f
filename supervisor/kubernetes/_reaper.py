"""The cluster's reaper: at supervisor start, delete what launches of a dead supervisor left behind.

Every object a launch creates (Pod, Secret, NetworkPolicy) carries the labels
``roundtable.supervisor=<id>``, ``roundtable.launch=<launch>`` and ``roundtable.owner=<owner>``
(:func:`supervisor.kubernetes._manifests.labels`). :func:`reap_cluster`:

1. fails every active launch not in ``keep`` (reason ``supervisor_restarted``), as the Docker reaper
   does, and calls ``on_orphan`` for each so its grant is revoked first;
2. lists the three kinds by the supervisor's label and deletes each object whose launch is not in
   ``keep`` and whose owner is not alive.

Whether an owner is alive is one call, ``live_owners(names)``: today the owner locks of
:func:`supervisor.launch.live_owners` (one host), and a database lease once supervisors on several
hosts share a store and a namespace; the reaper does not care which. A Secret or NetworkPolicy whose
Pod is gone is deleted by the cluster's garbage collector too (its owner reference), unless the
supervisor died before it set that reference: the labels find those.
"""

from __future__ import annotations

from collections.abc import Callable, Collection

import anyio.to_thread
import structlog

from store.errors import RoundtableError
from store.launches import LaunchStore
from supervisor.docker import OrphanHook, ReapReport, notify_orphans
from supervisor.kubernetes._api import ClusterApi, Kind
from supervisor.kubernetes._manifests import LABEL_OWNER
from supervisor.launch import LABEL_LAUNCH, LABEL_SUPERVISOR

__all__ = ["OwnersAlive", "reap_cluster"]

OwnersAlive = Callable[[Collection[str]], Collection[str]]
"""Which of the owner names given still live (blocking; run in a worker thread)."""

_log = structlog.get_logger("roundtable.reaper")
_KINDS: tuple[Kind, ...] = ("pod", "secret", "networkpolicy")


async def reap_cluster(
    api: ClusterApi,
    launches: LaunchStore,
    *,
    supervisor_id: str,
    keep: Collection[str] = (),
    on_orphan: OrphanHook | None = None,
    live_owners: OwnersAlive | None = None,
) -> ReapReport:
    """Fail orphaned launches, then delete their labelled objects (module docstring)."""
    kept = frozenset(keep)
    warnings: list[str] = []
    failed = await launches.db.run(launches.fail_orphans, keep=kept, reason="supervisor_restarted")
    await notify_orphans([launch.id for launch in failed], on_orphan, warnings, launcher="kubernetes")
    removed: list[str] = []
    selector = f"{LABEL_SUPERVISOR}={supervisor_id}"
    for kind in _KINDS:
        try:
            found = await api.list_labelled(kind, selector)
        except RoundtableError as exc:
            warnings.append(f"could not list {kind}s: {exc.message}")
            continue
        named = {str(item["metadata"]["name"]): dict(item["metadata"].get("labels") or {}) for item in found}
        uids = {str(item["metadata"]["name"]): str(item["metadata"].get("uid") or "") for item in found}
        owners = {labels[LABEL_OWNER] for labels in named.values() if labels.get(LABEL_OWNER)}
        alive = set(await anyio.to_thread.run_sync(live_owners, owners)) if live_owners and owners else set()
        for name, labels in sorted(named.items()):
            if labels.get(LABEL_LAUNCH) in kept or (labels.get(LABEL_OWNER) or None) in alive:
                continue
            try:
                if await api.delete(kind, name, uid=uids[name]):  # not one made since under that name
                    removed.append(f"{kind}/{name}")
                    _log.warning("object_reaped", kind=kind, name=name)
            except RoundtableError as exc:
                warnings.append(f"could not delete {kind} {name}: {exc.message}")
    return ReapReport(
        failed_launches=tuple(launch.id for launch in failed),
        removed_containers=tuple(removed),
        removed_runtime_dirs=(),
        warnings=tuple(warnings),
    )
