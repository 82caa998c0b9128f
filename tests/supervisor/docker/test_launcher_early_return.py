"""A launch answers once its container has stopped and its end is recorded; the removal may finish
after, in the background (fake engine: removal held back on purpose)."""

from __future__ import annotations

import threading
from functools import partial

import anyio
import anyio.abc
import anyio.lowlevel
import pytest

from store import Store
from store.launches import LaunchStatus
from supervisor.docker import Claimed, DockerClient, DockerLauncher
from supervisor.launch import LaunchPhase, LaunchSpec
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


# -- a background removal waits while other launches run, within bounds ---------------------------------


class NotedRemoval(FakeDockerBackend):
    """An engine that notes each removal, for a test to wait on."""

    def __init__(self) -> None:
        super().__init__()
        self.removed: dict[str, threading.Event] = {}

    def remove(self, container: str) -> None:
        """Remove, then say so."""
        super().remove(container)
        self.removed.setdefault(container, threading.Event()).set()

    async def wait_removed(self, container: str | None) -> None:
        """Return once ``container`` was removed (within 10 s)."""
        event = self.removed.setdefault(str(container), threading.Event())
        assert await anyio.to_thread.run_sync(event.wait, 10), f"{container} was never removed"


class Held:
    """A phase hook that holds its launch once the container runs, until ``go`` is set."""

    def __init__(self) -> None:
        self.running, self.go = anyio.Event(), anyio.Event()

    async def __call__(self, phase: LaunchPhase) -> None:
        if phase is LaunchPhase.RUNNING:
            self.running.set()
            await self.go.wait()


@pytest.fixture
def noted(store: Store, supervisor_id: str) -> tuple[NotedRemoval, DockerLauncher]:
    """A launcher on an engine that notes its removals."""
    engine = NotedRemoval()
    client = DockerClient(lambda: engine, retry=FAST_RETRY)
    return engine, DockerLauncher(store.launches, supervisor_id=supervisor_id, docker=client)


async def running_held(launcher: DockerLauncher, spec: LaunchSpec, group: anyio.abc.TaskGroup) -> Held:
    """Start ``spec``'s launch in ``group`` and return once its container runs, held there."""
    held = Held()
    group.start_soon(partial(launcher.run, spec, on_phase=held, spawn=group.start_soon))
    with anyio.fail_after(10):
        await held.running.wait()
    return held


async def settle() -> None:
    """Give every ready task (a removal about to wait, or not) its turn."""
    for _ in range(20):
        await anyio.lowlevel.checkpoint()


async def test_a_removal_waits_while_another_launch_runs_and_goes_when_none_does(
    noted: tuple[NotedRemoval, DockerLauncher], request_launch: RequestLaunch
) -> None:
    engine, launcher = noted
    async with anyio.create_task_group() as background:
        held = await running_held(launcher, request_launch(), background)
        ended = await launcher.run(request_launch(), spawn=background.start_soon)
        await settle()
        assert ended.container_id in engine.containers and engine.count("remove") == 0
        held.go.set()
        await engine.wait_removed(ended.container_id)
    assert engine.containers == {}


async def test_a_removal_waits_no_longer_than_its_bound(
    noted: tuple[NotedRemoval, DockerLauncher], request_launch: RequestLaunch, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("supervisor.docker._ending._HOLD_SECONDS", 0.01)
    engine, launcher = noted
    async with anyio.create_task_group() as background:
        held = await running_held(launcher, request_launch(), background)
        ended = await launcher.run(request_launch(), spawn=background.start_soon)
        await engine.wait_removed(ended.container_id)  # while the other launch still runs
        assert len(engine.containers) == 1
        held.go.set()
    assert engine.containers == {}


async def test_past_so_many_waiting_removals_the_next_goes_at_once(
    noted: tuple[NotedRemoval, DockerLauncher], request_launch: RequestLaunch, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("supervisor.docker._ending._HOLD_AT_MOST", 1)
    engine, launcher = noted
    async with anyio.create_task_group() as background:
        held = await running_held(launcher, request_launch(), background)
        waits = await launcher.run(request_launch(), spawn=background.start_soon)
        await settle()  # its removal is the one that waits
        goes = await launcher.run(request_launch(), spawn=background.start_soon)
        await engine.wait_removed(goes.container_id)
        assert waits.container_id in engine.containers  # still waiting for the held launch
        held.go.set()
    assert engine.containers == {}


async def test_a_waiting_removal_that_is_cancelled_removes_at_once(
    noted: tuple[NotedRemoval, DockerLauncher], request_launch: RequestLaunch
) -> None:
    engine, launcher = noted
    async with anyio.create_task_group() as launches:
        held = await running_held(launcher, request_launch(), launches)
        async with anyio.create_task_group() as background:  # a serve's clean-up, then it stops
            ended = await launcher.run(request_launch(), spawn=background.start_soon)
            await settle()
            assert ended.container_id in engine.containers
            background.cancel_scope.cancel()
        assert ended.container_id not in engine.containers  # removed on the way out, not left
        held.go.set()
    assert engine.containers == {}
