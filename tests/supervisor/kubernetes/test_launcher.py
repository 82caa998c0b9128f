"""The Kubernetes launcher's lifecycle and faults, against the fake API server through the real client.

Each test ends with nothing of the launch left in the fake cluster (no leaked Pod, Secret or
NetworkPolicy) unless it says otherwise, and with the launch record final.
"""

from __future__ import annotations

import anyio
import pytest

from store import Conflict, LaunchFailed, Store
from store.launches import LaunchStatus
from supervisor.kubernetes import KubernetesLauncher, object_name
from supervisor.launch import LaunchPhase
from tests.supervisor.kubernetes._fake_api import FakeCluster, Fault, PodScript
from tests.supervisor.kubernetes.conftest import TOKEN, K8sSpec, make_api

pytestmark = pytest.mark.anyio

_RESOURCES = ("pods", "secrets", "networkpolicies")


def _left(cluster: FakeCluster) -> dict[str, list[str]]:
    return {resource: names for resource in _RESOURCES if (names := cluster.names(resource))}


async def test_a_launch_that_exits_zero_is_recorded_and_leaves_nothing(
    launcher: KubernetesLauncher, k8s_spec: K8sSpec, cluster: FakeCluster, store: Store
) -> None:
    cluster.script = PodScript(exit_code=0, log=f"token was {TOKEN}\nall done\n")
    phases: list[LaunchPhase] = []
    spec = k8s_spec()
    outcome = await launcher.run(spec, on_phase=phases.append)
    assert outcome.status is LaunchStatus.EXITED and outcome.exit_code == 0
    assert phases == list(LaunchPhase)
    assert TOKEN not in outcome.log_tail and "[redacted]" in outcome.log_tail
    record = store.launches.get(spec.launch_id)
    assert record.status is LaunchStatus.EXITED and record.container_id == outcome.container_id
    assert _left(cluster) == {}
    secret, policy, created_pod = cluster.created
    assert (secret["kind"], policy["kind"], created_pod["kind"]) == ("Secret", "NetworkPolicy", "Pod")
    assert set(secret["data"]) == {"token", "plan.json"}  # the socket stays behind


async def test_the_secret_and_policy_are_owned_by_the_pod(
    launcher: KubernetesLauncher, k8s_spec: K8sSpec, cluster: FakeCluster
) -> None:
    cluster.script = PodScript(exit_code=0)
    cluster.gc = False
    spec = k8s_spec()
    name = object_name(spec.launch_id)
    seen: dict[str, object] = {}

    def look(phase: LaunchPhase) -> None:
        if phase is LaunchPhase.CREATED:
            pod_uid = cluster.objects[("pods", "roundtable", name)]["metadata"]["uid"]
            for resource in ("secrets", "networkpolicies"):
                refs = cluster.objects[(resource, "roundtable", name)]["metadata"]["ownerReferences"]
                seen[resource] = [ref["uid"] for ref in refs] == [pod_uid]

    await launcher.run(spec, on_phase=look)
    assert seen == {"secrets": True, "networkpolicies": True}
    assert _left(cluster) == {}  # deleted explicitly even without the garbage collector


@pytest.mark.parametrize(
    ("script", "status", "reason", "oom"),
    [
        (PodScript(exit_code=3), LaunchStatus.FAILED, "nonzero_exit", False),
        (PodScript(exit_code=137, reason="OOMKilled"), LaunchStatus.FAILED, "oom", True),
        (
            PodScript(exit_code=None, pod_reason="DeadlineExceeded"),
            LaunchStatus.TIMEOUT,
            "deadline_exceeded",
            False,
        ),
    ],
)
async def test_a_pod_that_fails_is_recorded_with_its_reason(
    launcher: KubernetesLauncher,
    k8s_spec: K8sSpec,
    cluster: FakeCluster,
    store: Store,
    script: PodScript,
    status: LaunchStatus,
    reason: str,
    oom: bool,
) -> None:
    cluster.script = script
    spec = k8s_spec()
    outcome = await launcher.run(spec)
    assert (outcome.status, outcome.reason, outcome.oom_killed) == (status, reason, oom)
    assert store.launches.get(spec.launch_id).status is status
    assert _left(cluster) == {}


@pytest.mark.parametrize("waiting", ["ImagePullBackOff", "CreateContainerConfigError"])
async def test_a_pod_that_cannot_start_fails_at_once(
    launcher: KubernetesLauncher, k8s_spec: K8sSpec, cluster: FakeCluster, store: Store, waiting: str
) -> None:
    cluster.script = PodScript(waiting=waiting)
    spec = k8s_spec(timeout_seconds=300.0)
    with pytest.raises(LaunchFailed, match=waiting):
        await launcher.run(spec)
    record = store.launches.get(spec.launch_id)
    assert (record.status, record.reason) == (LaunchStatus.FAILED, "start_failed")
    assert _left(cluster) == {}


async def test_a_pod_past_the_launchers_own_deadline_is_deleted(
    store: Store, k8s_spec: K8sSpec, cluster: FakeCluster, launcher: KubernetesLauncher
) -> None:
    cluster.script = PodScript(exit_code=None)  # runs until deleted; the kubelet never ends it
    launcher.deadline_grace = 0.0
    spec = k8s_spec(timeout_seconds=1.0)
    outcome = await launcher.run(spec)
    assert (outcome.status, outcome.reason) == (LaunchStatus.TIMEOUT, "deadline_exceeded")
    assert _left(cluster) == {}


@pytest.mark.parametrize("resource", _RESOURCES)
@pytest.mark.parametrize("action", [500, 503, "drop"])
async def test_transient_create_failures_are_retried(
    launcher: KubernetesLauncher, k8s_spec: K8sSpec, cluster: FakeCluster, resource: str, action: int | str
) -> None:
    cluster.faults.append(Fault("POST", resource, action, times=2))
    outcome = await launcher.run(k8s_spec())
    assert outcome.status is LaunchStatus.EXITED
    assert _left(cluster) == {}


@pytest.mark.parametrize("resource", _RESOURCES)
async def test_a_create_whose_answer_was_lost_is_taken_on_the_retry(
    launcher: KubernetesLauncher, k8s_spec: K8sSpec, cluster: FakeCluster, resource: str
) -> None:
    cluster.faults.append(Fault("POST", resource, 500, after=True))
    outcome = await launcher.run(k8s_spec())
    assert outcome.status is LaunchStatus.EXITED
    kinds = {"pods": "Pod", "secrets": "Secret", "networkpolicies": "NetworkPolicy"}
    assert [p["kind"] for p in cluster.created].count(kinds[resource]) == 1  # made once, then taken
    assert _left(cluster) == {}


@pytest.mark.parametrize("resource", _RESOURCES)
@pytest.mark.parametrize("action", [500, 400, 403, "drop", "hang"])
async def test_a_create_that_keeps_failing_fails_the_launch_and_leaks_nothing(
    store: Store,
    k8s_spec: K8sSpec,
    cluster: FakeCluster,
    k8s_config: object,
    resource: str,
    action: int | str,
) -> None:
    cluster.hang_seconds = 3
    api = make_api(cluster, request_seconds=0.5 if action == "hang" else 15.0)
    launcher = KubernetesLauncher(store.launches, api, k8s_config, supervisor_id="rtk8stest")  # type: ignore[arg-type]
    # Every other failure is injected after the object is made (its answer lost); a request that never
    # answers makes nothing, since one the launcher gave up on may land after its clean-up (then the
    # reaper deletes it by its labels: test_reaper.py).
    cluster.faults.append(Fault("POST", resource, action, times=10, after=action != "hang"))
    spec = k8s_spec()
    with pytest.raises(LaunchFailed):
        await launcher.run(spec)
    record = store.launches.get(spec.launch_id)
    assert (record.status, record.reason) == (LaunchStatus.FAILED, "create_failed")
    assert _left(cluster) == {}
    api.api_client.close()  # type: ignore[no-untyped-call]


@pytest.mark.parametrize("resource", _RESOURCES)
async def test_a_create_whose_answer_timed_out_is_taken_on_the_retry(
    store: Store, k8s_spec: K8sSpec, cluster: FakeCluster, k8s_config: object, resource: str
) -> None:
    cluster.hang_seconds = 5
    api = make_api(cluster, request_seconds=1.0)
    launcher = KubernetesLauncher(store.launches, api, k8s_config, supervisor_id="rtk8stest")  # type: ignore[arg-type]
    cluster.faults.append(Fault("POST", resource, "hang", after=True))
    outcome = await launcher.run(k8s_spec())
    assert outcome.status is LaunchStatus.EXITED
    assert _left(cluster) == {}
    api.api_client.close()  # type: ignore[no-untyped-call]


async def test_a_name_taken_by_someone_else_is_not_taken_over(
    launcher: KubernetesLauncher, k8s_spec: K8sSpec, cluster: FakeCluster, store: Store
) -> None:
    spec = k8s_spec()
    name = object_name(spec.launch_id)
    foreign = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "roundtable", "labels": {"app": "theirs"}},
    }
    cluster.put("pods", foreign)
    with pytest.raises(LaunchFailed, match="exists already"):
        await launcher.run(spec)
    assert store.launches.get(spec.launch_id).status is LaunchStatus.FAILED
    assert _left(cluster) == {"pods": [name]}  # its Secret and NetworkPolicy are gone; theirs stays
    assert cluster.objects[("pods", "roundtable", name)]["metadata"]["labels"] == {"app": "theirs"}


@pytest.mark.parametrize("resource", _RESOURCES)
async def test_delete_failures_are_retried(
    launcher: KubernetesLauncher, k8s_spec: K8sSpec, cluster: FakeCluster, resource: str
) -> None:
    cluster.gc = False
    cluster.faults.append(Fault("DELETE", resource, 503, times=2))
    outcome = await launcher.run(k8s_spec())
    assert outcome.status is LaunchStatus.EXITED and outcome.warnings == ()
    assert _left(cluster) == {}


async def test_a_delete_that_keeps_failing_is_a_warning_for_the_reaper(
    launcher: KubernetesLauncher, k8s_spec: K8sSpec, cluster: FakeCluster, store: Store
) -> None:
    cluster.gc = False
    cluster.faults.append(Fault("DELETE", "secrets", 500, times=10))
    spec = k8s_spec()
    outcome = await launcher.run(spec)
    assert outcome.status is LaunchStatus.EXITED
    assert len(outcome.warnings) == 1 and "the reaper will" in outcome.warnings[0]
    assert _left(cluster) == {"secrets": [object_name(spec.launch_id)]}
    cluster.faults.clear()
    report = await launcher.reap()
    assert report.removed_containers == (f"secret/{object_name(spec.launch_id)}",)
    assert _left(cluster) == {}


async def test_a_broken_watch_is_resumed(
    launcher: KubernetesLauncher, k8s_spec: K8sSpec, cluster: FakeCluster
) -> None:
    cluster.faults.append(Fault("GET", "pods", "drop", watch=True))
    cluster.faults.append(Fault("GET", "pods", 500, watch=True))
    outcome = await launcher.run(k8s_spec())
    assert outcome.status is LaunchStatus.EXITED


async def test_an_unreadable_log_is_a_warning(
    launcher: KubernetesLauncher, k8s_spec: K8sSpec, cluster: FakeCluster
) -> None:
    cluster.faults.append(Fault("GET", "log", 403))
    outcome = await launcher.run(k8s_spec())
    assert outcome.status is LaunchStatus.EXITED and outcome.log_tail == ""
    assert "could not read the log" in outcome.warnings[0]


async def test_cancelling_a_launch_deletes_its_pod_and_records_cancelled(
    launcher: KubernetesLauncher, k8s_spec: K8sSpec, cluster: FakeCluster, store: Store
) -> None:
    cluster.script = PodScript(exit_code=None)
    spec = k8s_spec()

    async def cancel_when_running(scope: anyio.CancelScope, phase: LaunchPhase) -> None:
        if phase is LaunchPhase.RUNNING:
            scope.cancel()

    with anyio.CancelScope() as scope:
        await launcher.run(spec, on_phase=lambda phase: cancel_when_running(scope, phase))
    assert store.launches.get(spec.launch_id).status is LaunchStatus.CANCELLED
    assert _left(cluster) == {}


async def test_a_failing_hook_fails_the_launch_and_cleans_up(
    launcher: KubernetesLauncher, k8s_spec: K8sSpec, cluster: FakeCluster, store: Store
) -> None:
    def explode(phase: LaunchPhase) -> None:
        if phase is LaunchPhase.CREATED:
            raise RuntimeError("boom")

    spec = k8s_spec()
    with pytest.raises(LaunchFailed, match="on_phase hook"):
        await launcher.run(spec, on_phase=explode)
    record = store.launches.get(spec.launch_id)
    assert (record.status, record.reason) == (LaunchStatus.FAILED, "hook_failed")
    assert _left(cluster) == {}


async def test_only_a_requested_launch_runs(
    launcher: KubernetesLauncher, k8s_spec: K8sSpec, cluster: FakeCluster
) -> None:
    spec = k8s_spec()
    await launcher.run(spec)
    with pytest.raises(Conflict):
        await launcher.run(spec)
    assert cluster.names("pods") == []
