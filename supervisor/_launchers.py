"""Which launcher a supervisor runs launches with: ``[supervisor] launcher`` (Docker by default)."""

from __future__ import annotations

from store import Store
from supervisor.docker import DockerLauncher, Launcher
from supervisor.launch import Ownership, RuntimeRoot

__all__ = ["configured_launcher"]


def configured_launcher(
    store: Store, *, supervisor_id: str, runtime: RuntimeRoot, owner: Ownership
) -> Launcher:
    """The Docker launcher, or with ``launcher = "kubernetes"`` the cluster's (whose client is imported
    only then). Both reap by the same notion of ownership: ``owner``'s lock (SQLite) or lease
    (PostgreSQL), held while it lives."""
    if store.config.supervisor.launcher == "kubernetes":
        from supervisor.kubernetes import kubernetes_launcher

        return kubernetes_launcher(
            store.launches,
            store.config.kubernetes,
            supervisor_id=supervisor_id,
            owner=owner.name,
            live_owners=owner.live,
        )
    return DockerLauncher(store.launches, supervisor_id=supervisor_id, runtime=runtime, ownership=owner)
