"""Which objects a launch takes as its own and deletes: only those of its attempt, never a tenant's.

Another tenant of the namespace can guess a launch's object names and labels; these tests pre-create
or substitute objects as that tenant would, and check that the launcher neither uses nor deletes them.
They also check what a pod learns without DNS (its ``hostAliases``) and that the log tail is the
redacted end of the log.
"""

from __future__ import annotations

from typing import Any

import pytest

from store import LaunchFailed, Store
from store.config import KubernetesConfig
from store.launches import LaunchStatus
from supervisor.kubernetes import KubernetesLauncher, object_name
from supervisor.kubernetes._manifests import ANNOTATION_ATTEMPT, labels
from supervisor.launch import LaunchPhase
from tests.supervisor.kubernetes._fake_api import FakeCluster, PodScript
from tests.supervisor.kubernetes.conftest import TOKEN, K8sSpec, make_api

pytestmark = pytest.mark.anyio

_KINDS = {"pods": "Pod", "secrets": "Secret", "networkpolicies": "NetworkPolicy"}
_FOREIGN: dict[str, dict[str, Any]] = {
    "pods": {"spec": {"containers": [{"name": "role", "image": "evil"}]}},
    "secrets": {"data": {"token": "ZXZpbA=="}},
    "networkpolicies": {"spec": {"podSelector": {}, "egress": [{}], "policyTypes": ["Egress"]}},
}


def _foreign(resource: str, name: str, marks: dict[str, str]) -> dict[str, Any]:
    api = "networking.k8s.io/v1" if resource == "networkpolicies" else "v1"
    metadata = {"name": name, "namespace": "roundtable", "labels": marks}
    return {"apiVersion": api, "kind": _KINDS[resource], "metadata": metadata, **_FOREIGN[resource]}


@pytest.mark.parametrize("resource", list(_KINDS))
async def test_an_object_with_our_labels_made_by_someone_else_is_not_taken(
    launcher: KubernetesLauncher, k8s_spec: K8sSpec, cluster: FakeCluster, store: Store, resource: str
) -> None:
    spec = k8s_spec()
    name = object_name(spec.launch_id)
    marks = labels(spec, launcher.supervisor_id, launcher.owner)  # predictable: the tenant copies them
    cluster.put(resource, _foreign(resource, name, marks))
    with pytest.raises(LaunchFailed, match="exists already"):
        await launcher.run(spec)
    assert store.launches.get(spec.launch_id).status is LaunchStatus.FAILED
    assert {res: cluster.names(res) for res in _KINDS} == {
        res: [name] if res == resource else [] for res in _KINDS
    }  # ours are gone, theirs stays untouched
    assert ANNOTATION_ATTEMPT not in (cluster.objects[(resource, "roundtable", name)]["metadata"])


async def test_each_object_of_an_attempt_bears_its_own_random_annotation(
    launcher: KubernetesLauncher, k8s_spec: K8sSpec, cluster: FakeCluster
) -> None:
    await launcher.run(k8s_spec())
    await launcher.run(k8s_spec())
    marks = [document["metadata"]["annotations"][ANNOTATION_ATTEMPT] for document in cluster.created]
    assert len(marks) == 6 and len(set(marks)) == 6 and all(len(mark) == 32 for mark in marks)


async def test_an_object_made_in_place_of_ours_is_not_deleted(
    launcher: KubernetesLauncher, k8s_spec: K8sSpec, cluster: FakeCluster
) -> None:
    cluster.gc = False
    spec = k8s_spec()
    name = object_name(spec.launch_id)
    marks = labels(spec, launcher.supervisor_id, launcher.owner)

    def substitute(phase: LaunchPhase) -> None:
        if phase is LaunchPhase.STOPPED:  # ours goes, a tenant's takes its name before our delete
            cluster.delete("secrets", "roundtable", name)
            cluster.put("secrets", _foreign("secrets", name, marks))

    outcome = await launcher.run(spec, on_phase=substitute)
    assert outcome.status is LaunchStatus.EXITED
    assert cluster.names("secrets") == [name] and cluster.names("pods") == []
    assert cluster.objects[("secrets", "roundtable", name)]["data"] == _FOREIGN["secrets"]["data"]
    assert any("another object now" in warning for warning in outcome.warnings)


async def test_the_log_tail_is_the_redacted_end_of_the_log(
    store: Store, k8s_spec: K8sSpec, cluster: FakeCluster, k8s_config: KubernetesConfig
) -> None:
    keep = 200 + len(TOKEN)  # what the launcher reads: log_bytes and the redaction margin
    # The token straddles byte `keep` of the window: the API server's limitBytes would cut it there.
    cluster.script = PodScript(exit_code=0, log="x" * (keep - 10) + TOKEN + "\nthe last line\n")
    launcher = KubernetesLauncher(
        store.launches, make_api(cluster), k8s_config, supervisor_id="rtk8stest", log_bytes=200
    )
    outcome = await launcher.run(k8s_spec())
    assert TOKEN[:10] not in outcome.log_tail and "[redacted]" in outcome.log_tail
    assert outcome.log_tail.endswith("the last line\n")
    assert not any("limitBytes" in path for _method, path, _watch in cluster.requests)
    launcher.api.api_client.close()  # type: ignore[no-untyped-call]


@pytest.mark.parametrize(
    ("update", "alias"),
    [
        ({}, {"ip": "10.96.0.20", "hostnames": ["roundtable-supervisor.roundtable.svc"]}),
        ({"capability_url": "https://localhost:8443", "capability_ip": ""}, "resolved"),
        ({"capability_url": "https://10.0.0.7:8443", "capability_ip": ""}, None),
        ({"dns": True, "capability_ip": ""}, None),
    ],
)
async def test_a_pod_without_dns_finds_the_endpoint_in_its_host_aliases(
    store: Store,
    k8s_spec: K8sSpec,
    cluster: FakeCluster,
    k8s_config: KubernetesConfig,
    update: dict[str, Any],
    alias: object,
) -> None:
    config = k8s_config.model_copy(update=update)
    launcher = KubernetesLauncher(store.launches, make_api(cluster), config, supervisor_id="rtk8stest")
    await launcher.run(k8s_spec())
    pod_spec = next(d for d in cluster.created if d["kind"] == "Pod")["spec"]
    if alias == "resolved":
        (found,) = pod_spec["hostAliases"]
        assert found["ip"] in ("127.0.0.1", "::1") and found["hostnames"] == ["localhost"]
    else:
        assert pod_spec.get("hostAliases") == (None if alias is None else [alias])
    launcher.api.api_client.close()  # type: ignore[no-untyped-call]
