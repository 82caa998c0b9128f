"""Fixtures for the launcher tests: the real Docker engine, the role image, launch requests.

Docker tests never skip: when the engine is unreachable or the role image cannot be had, they fail
with a message saying so. Every test marked ``docker`` is followed by a check that no container
labelled with this session's supervisor id survived it (the check removes leftovers, so one failure
does not cascade, and then fails the test).
"""

from __future__ import annotations

import secrets
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from store import Store
from supervisor.docker._client import DockerClient, RetryPolicy
from supervisor.docker._launcher import DockerLauncher
from supervisor.launch._runtime_dir import RuntimeRoot
from supervisor.launch._spec import LABEL_SUPERVISOR, LaunchLimits, LaunchSpec
from tests.fakes.docker_engine import FakeDockerBackend

REPO_ROOT = Path(__file__).resolve().parents[2]
FAST_RETRY = RetryPolicy(attempts=3, initial_wait=0.001, max_wait=0.01)
SESSION_SUPERVISOR_ID = f"rttest{secrets.token_hex(5)}"

RequestLaunch = Callable[..., LaunchSpec]


@pytest.fixture(scope="session")
def supervisor_id() -> str:
    """The supervisor id every launcher of this session labels its containers with."""
    return SESSION_SUPERVISOR_ID


@pytest.fixture(autouse=True)
def _no_labelled_container_survives(request: pytest.FixtureRequest) -> Iterator[None]:
    if request.node.get_closest_marker("docker") is None:
        yield
        return
    client = request.getfixturevalue("docker_sdk")
    yield
    leftovers = client.containers.list(
        all=True, filters={"label": f"{LABEL_SUPERVISOR}={SESSION_SUPERVISOR_ID}"}
    )
    for container in leftovers:
        container.remove(force=True)
    assert not leftovers, f"labelled containers survived the test: {[c.name for c in leftovers]}"


@pytest.fixture
def runtime_root(supervisor_id: str) -> Iterator[RuntimeRoot]:
    """A runtime root under a short fresh directory (pytest's tmp_path can be too long for sockets)."""
    base = Path(tempfile.mkdtemp(prefix="rtt-", dir="/tmp"))
    try:
        yield RuntimeRoot(supervisor_id, base=base / "rt")
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def request_launch(store: Store) -> RequestLaunch:
    """Record a requested launch and return its spec (keyword arguments override spec fields)."""

    def make(image: str = "roundtable-role:0.1.0", **fields: Any) -> LaunchSpec:
        launch = store.launches.request(
            role="memory_oracle", agent_id="memory-oracle-1", proposal_id="P-test", image=image
        )
        fields.setdefault("limits", LaunchLimits(memory_bytes=64 * 1024**2, cpus=0.5, pids=32, nofile=256))
        fields.setdefault("timeout_seconds", 30.0)
        return LaunchSpec(
            launch_id=launch.id, role=launch.role, proposal_id=launch.proposal_id, image=image, **fields
        )

    return make


@pytest.fixture
def fake() -> FakeDockerBackend:
    """A fresh fault-injecting fake engine."""
    return FakeDockerBackend()


@pytest.fixture
def fake_launcher(store: Store, fake: FakeDockerBackend, supervisor_id: str) -> DockerLauncher:
    """A launcher over :func:`fake`, retrying fast."""
    return DockerLauncher(
        store.launches, supervisor_id=supervisor_id, docker=DockerClient(lambda: fake, retry=FAST_RETRY)
    )
