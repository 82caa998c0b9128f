"""Fixtures for the Kubernetes launcher's tests: the fake API server, the real client pointed at it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from store import Store
from store.config import KubernetesConfig
from supervisor.kubernetes import ClusterApi, KubernetesLauncher, RetryPolicy
from supervisor.launch import LaunchSpec, RuntimeRoot
from tests.supervisor.conftest import RequestLaunch
from tests.supervisor.kubernetes._fake_api import FakeCluster

FAST = RetryPolicy(attempts=3, initial_wait=0.001, max_wait=0.01)
TOKEN = "rt_cap_sekrit-token-value"
K8sSpec = Callable[..., LaunchSpec]


@pytest.fixture
def cluster() -> Iterator[FakeCluster]:
    """The fake API server, serving on loopback for the test."""
    fake = FakeCluster().start()
    try:
        yield fake
    finally:
        fake.stop()


def make_api(cluster: FakeCluster, *, request_seconds: float = 15.0) -> ClusterApi:
    """The real client, configured for the fake, no urllib3 retries of its own. The request timeout is
    long (a loaded machine must not turn a slow answer into a lost one) except where a test wants it
    to fire."""
    configuration = client.Configuration(host=cluster.url)
    configuration.retries = 0
    return ClusterApi(
        client.ApiClient(configuration), namespace="roundtable", request_seconds=request_seconds, retry=FAST
    )


@pytest.fixture
def k8s_config() -> KubernetesConfig:
    """A ``[kubernetes]`` section for the tests."""
    return KubernetesConfig(
        capability_url="https://roundtable-supervisor.roundtable.svc:8443", capability_ip="10.96.0.20"
    )


@pytest.fixture
def launcher(
    store: Store, cluster: FakeCluster, k8s_config: KubernetesConfig
) -> Iterator[KubernetesLauncher]:
    """A launcher on the fake cluster, owned by ``owner-a``."""
    launcher = KubernetesLauncher(
        store.launches, make_api(cluster), k8s_config, supervisor_id="rtk8stest", owner="1-0000aaaa"
    )
    yield launcher
    launcher.api.api_client.close()  # type: ignore[no-untyped-call]


@pytest.fixture
def k8s_spec(request_launch: RequestLaunch, runtime_root: RuntimeRoot) -> K8sSpec:
    """A recorded launch's spec with a runtime directory holding its token file."""

    def make(**fields: Any) -> LaunchSpec:
        probe = request_launch(**fields)
        rundir = runtime_root.create(probe.launch_id)
        rundir.write_token_file(TOKEN)
        rundir.write_file("plan.json", b"{}")
        return LaunchSpec(
            **{**probe.__dict__, "runtime_dir": Path(rundir.path), "redact": frozenset({TOKEN})}
        )

    return make
