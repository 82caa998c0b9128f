"""Reaping by labels: the objects of launches nobody runs are deleted, those of live owners kept."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import pytest

from store import Store
from store.launches import LaunchStatus
from supervisor.kubernetes import KubernetesLauncher, object_name
from tests.supervisor.kubernetes._fake_api import FakeCluster, Fault
from tests.supervisor.kubernetes.conftest import K8sSpec

pytestmark = pytest.mark.anyio


def _object(resource: str, name: str, labels: dict[str, str]) -> dict[str, Any]:
    kind = {"pods": "Pod", "secrets": "Secret", "networkpolicies": "NetworkPolicy"}[resource]
    return {"kind": kind, "metadata": {"name": name, "namespace": "roundtable", "labels": labels}}


def _leave(cluster: FakeCluster, launch_id: str, owner: str, supervisor: str = "rtk8stest") -> str:
    name = object_name(launch_id)
    labels = {"roundtable.supervisor": supervisor, "roundtable.launch": launch_id, "roundtable.owner": owner}
    for resource in ("pods", "secrets", "networkpolicies"):
        cluster.put(resource, _object(resource, name, labels))
    return name


async def test_reaping_deletes_a_dead_owners_objects_and_fails_its_launches(
    launcher: KubernetesLauncher, k8s_spec: K8sSpec, cluster: FakeCluster, store: Store
) -> None:
    dead = k8s_spec()
    store.launches.mark_starting(dead.launch_id, "uid-dead")
    dead_name = _leave(cluster, dead.launch_id, owner="99-deadbeef")
    alive_name = _leave(cluster, "L-20260101T000000000000Z-0000000000aa", owner="7-00000001")
    other_name = _leave(
        cluster, "L-20260101T000000000000Z-0000000000bb", owner="99-deadbeef", supervisor="rtother"
    )
    revoked: list[str] = []
    asked: list[Collection[str]] = []

    def live(names: Collection[str]) -> set[str]:
        asked.append(sorted(names))
        return {"7-00000001"} & set(names)

    launcher.live_owners = live
    report = await launcher.reap(on_orphan=revoked.append)
    assert report.failed_launches == (dead.launch_id,) and revoked == [dead.launch_id]
    assert store.launches.get(dead.launch_id).status is LaunchStatus.FAILED
    assert sorted(report.removed_containers) == sorted(
        f"{kind}/{dead_name}" for kind in ("pod", "secret", "networkpolicy")
    )
    for resource in ("pods", "secrets", "networkpolicies"):
        assert cluster.names(resource) == sorted([alive_name, other_name])
    assert asked and all(names == ["7-00000001", "99-deadbeef"] for names in asked)
    assert report.complete


async def test_reaping_keeps_the_launches_it_is_told_to(
    launcher: KubernetesLauncher, cluster: FakeCluster
) -> None:
    kept = "L-20260101T000000000000Z-0000000000cc"
    name = _leave(cluster, kept, owner="99-deadbeef")
    report = await launcher.reap(keep=[kept])
    assert report.removed_containers == () and cluster.names("pods") == [name]


async def test_reaping_reports_what_it_could_not_do(
    launcher: KubernetesLauncher, cluster: FakeCluster
) -> None:
    _leave(cluster, "L-20260101T000000000000Z-0000000000dd", owner="99-deadbeef")
    cluster.faults.append(Fault("GET", "pods", 403, watch=False))
    cluster.faults.append(Fault("DELETE", "secrets", 403))
    report = await launcher.reap()
    assert not report.complete
    assert any("could not list pods" in w for w in report.warnings)
    assert any("could not delete secret" in w for w in report.warnings)
    assert cluster.names("networkpolicies") == []
