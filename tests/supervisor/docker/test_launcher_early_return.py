"""A launch answers once its container has stopped and its end is recorded; the removal may finish
after, in the background (fake engine: removal held back on purpose)."""

from __future__ import annotations

import threading

import anyio
import pytest

from store import Store
from store.launches import LaunchStatus
from supervisor.docker import Claimed, DockerClient, DockerLauncher
from tests.fakes.docker_engine import FakeDockerBackend
from tests.supervisor.conftest import FAST_RETRY, RequestLaunch

pytestmark = pytest.mark.anyio


class HeldRemoval(FakeDockerBackend):
    """An engine whose removals wait until the test lets them go."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()

    def remove(self, container: str) -> None:
        """Remove once released."""
        assert self.release.wait(30), "the removal was never released"
        super().remove(container)


async def test_the_outcome_comes_back_before_the_container_is_removed(
    store: Store, request_launch: RequestLaunch, supervisor_id: str
) -> None:
    engine = HeldRemoval()
    launcher = DockerLauncher(
        store.launches, supervisor_id=supervisor_id, docker=DockerClient(lambda: engine, retry=FAST_RETRY)
    )
    spec = request_launch()
    async with anyio.create_task_group() as background:
        with anyio.fail_after(10):
            outcome = await launcher.run(spec, spawn=background.start_soon)
        assert outcome.status is LaunchStatus.EXITED
        assert store.launches.get(spec.launch_id).status is LaunchStatus.EXITED  # the record is final
        assert list(engine.containers) == [outcome.container_id]  # and the container still there
        engine.release.set()
    assert engine.containers == {}  # removed in the background
    # Without a background, the removal comes first, as before.
    engine.release.set()
    spec = request_launch()
    outcome = await launcher.run(spec)
    assert engine.containers == {}


async def test_a_claimed_container_is_released_not_created_nor_started(
    store: Store, request_launch: RequestLaunch, supervisor_id: str
) -> None:
    engine = FakeDockerBackend()
    launcher = DockerLauncher(
        store.launches, supervisor_id=supervisor_id, docker=DockerClient(lambda: engine, retry=FAST_RETRY)
    )
    container_id = engine.create({"name": "roundtable-W-0123456789ab", "labels": {}})
    engine.start(container_id)
    released: list[str] = []

    async def release() -> None:
        released.append(container_id)

    spec = request_launch()
    outcome = await launcher.run(spec, claimed=Claimed(container_id, release))
    assert outcome.status is LaunchStatus.EXITED and outcome.container_id == container_id
    assert released == [container_id]
    assert engine.count("create") == 1 and engine.count("start") == 1  # the test's own, nothing more
    assert store.launches.get(spec.launch_id).container_id == container_id
    assert engine.containers == {}
