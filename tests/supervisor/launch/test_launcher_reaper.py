"""The reaper: after a supervisor crash, no labelled container, no active launch, no runtime directory.

The fake engine covers the bookkeeping; the real-Docker test kills a supervisor process with SIGKILL
while its container runs and restarts one on the same project.
"""

from __future__ import annotations

import signal
import sys
from typing import Any

import anyio
import pytest

from store import Store
from store.launches._store import LaunchStatus
from supervisor.docker._client import DockerClient
from supervisor.docker._launcher import DockerLauncher
from supervisor.launch._runtime_dir import RuntimeRoot, launch_suffix
from supervisor.launch._spec import LABEL_LAUNCH, LABEL_SUPERVISOR
from tests.fakes.docker_engine import FakeDockerBackend, api_error, connection_refused
from tests.supervisor.conftest import FAST_RETRY, REPO_ROOT

pytestmark = pytest.mark.anyio


def _request(store: Store) -> str:
    return store.launches.request(role="memory_oracle", agent_id="a", proposal_id="P-1", image="img").id


async def test_reaper_fails_orphans_and_removes_their_containers(
    store: Store, fake: FakeDockerBackend, supervisor_id: str, runtime_root: RuntimeRoot
) -> None:
    # What a crashed supervisor left: a launch in each active status, containers, runtime directories.
    requested, starting, running, kept = (_request(store) for _ in range(4))
    for launch_id in (starting, running, kept):
        container = fake.add_container({LABEL_SUPERVISOR: supervisor_id, LABEL_LAUNCH: launch_id})
        store.launches.mark_starting(launch_id, container.id)
    store.launches.mark_running(running)
    store.launches.mark_running(kept)
    stray = fake.add_container({LABEL_SUPERVISOR: supervisor_id, LABEL_LAUNCH: "L-unknown"}, running=False)
    foreign = fake.add_container({LABEL_SUPERVISOR: "another-project", LABEL_LAUNCH: "L-theirs"})
    for launch_id in (requested, running, kept):
        runtime_root.create(launch_id)

    revoked: list[str] = []

    async def on_orphan(launch_id: str) -> None:
        revoked.append(launch_id)

    launcher = DockerLauncher(
        store.launches,
        supervisor_id=supervisor_id,
        docker=DockerClient(lambda: fake, retry=FAST_RETRY),
        runtime=runtime_root,
    )
    launcher._running.add(kept)  # a launch this process runs right now is left alone
    report = await launcher.reap(on_orphan=on_orphan)

    assert sorted(report.failed_launches) == sorted([requested, starting, running])
    assert sorted(revoked) == sorted([requested, starting, running])
    for launch_id in (requested, starting, running):
        launch = store.launches.get(launch_id)
        assert (launch.status, launch.reason) == (LaunchStatus.FAILED, "supervisor_restarted")
    assert store.launches.get(kept).status is LaunchStatus.RUNNING
    remaining = {c.labels[LABEL_LAUNCH] for c in fake.containers.values()}
    assert remaining == {kept, "L-theirs"}
    assert stray.id in report.removed_containers and foreign.id not in report.removed_containers
    assert sorted(report.removed_runtime_dirs) == sorted([launch_suffix(requested), launch_suffix(running)])
    assert [p.name for p in runtime_root.path.iterdir()] == [launch_suffix(kept)]
    assert report.complete

    again = await launcher.reap(on_orphan=on_orphan)  # idempotent
    assert (again.failed_launches, again.removed_containers) == ((), ())


async def test_reaper_removes_a_recorded_container_even_without_our_label(
    store: Store, fake: FakeDockerBackend, supervisor_id: str
) -> None:
    """A project that moved has a new supervisor id; the recorded container id still finds it."""
    launch_id = _request(store)
    old = fake.add_container({LABEL_SUPERVISOR: "rt-old-path", LABEL_LAUNCH: launch_id})
    store.launches.mark_starting(launch_id, old.id)
    launcher = DockerLauncher(
        store.launches, supervisor_id=supervisor_id, docker=DockerClient(lambda: fake, retry=FAST_RETRY)
    )
    report = await launcher.reap()
    assert report.removed_containers == (old.id,) and fake.containers == {}


async def test_an_unreachable_engine_still_fails_the_launches(
    store: Store, fake: FakeDockerBackend, supervisor_id: str
) -> None:
    launch_id = _request(store)
    fake.fail("list", *[connection_refused()] * 3)
    launcher = DockerLauncher(
        store.launches, supervisor_id=supervisor_id, docker=DockerClient(lambda: fake, retry=FAST_RETRY)
    )
    report = await launcher.reap()
    assert report.failed_launches == (launch_id,)
    assert not report.complete and "could not list containers" in report.warnings[0]
    assert store.launches.get(launch_id).status is LaunchStatus.FAILED


async def test_a_failing_hook_or_removal_is_reported_not_raised(
    store: Store, fake: FakeDockerBackend, supervisor_id: str
) -> None:
    first, second = _request(store), _request(store)
    container = fake.add_container({LABEL_SUPERVISOR: supervisor_id, LABEL_LAUNCH: first})
    fake.fail("remove", api_error(400, "refused"))
    calls: list[str] = []

    def on_orphan(launch_id: str) -> None:
        calls.append(launch_id)
        if launch_id == first:
            raise RuntimeError("grant store unavailable")

    launcher = DockerLauncher(
        store.launches, supervisor_id=supervisor_id, docker=DockerClient(lambda: fake, retry=FAST_RETRY)
    )
    report = await launcher.reap(on_orphan=on_orphan)
    assert calls == [first, second]  # one failing revocation does not stop the others
    assert len(report.warnings) == 2 and container.id in fake.containers


# -- a real crash --------------------------------------------------------------------------------------

CRASHING_SUPERVISOR = """
import sys
from pathlib import Path

import anyio

from store import ProjectPaths, open_store
from supervisor.launch._spec import LaunchPhase, LaunchSpec
from supervisor.docker._launcher import DockerLauncher
from supervisor.launch._runtime_dir import RuntimeRoot

root, supervisor_id, image, base = sys.argv[1:5]


async def main() -> None:
    store = open_store(ProjectPaths(Path(root)))
    launch = store.launches.request(role="memory_oracle", agent_id="a", proposal_id="P-crash", image=image)
    runtime = RuntimeRoot(supervisor_id, base=Path(base))
    rundir = runtime.create(launch.id)
    rundir.write_token_file("crash-token")
    spec = LaunchSpec(
        launch_id=launch.id, role="memory_oracle", proposal_id="P-crash", image=image,
        entrypoint=("python3", "-c"), command=("import time; time.sleep(300)",),
        runtime_dir=rundir.path, timeout_seconds=300,
    )

    def on_phase(phase: LaunchPhase) -> None:
        if phase is LaunchPhase.RUNNING:
            print("RUNNING", launch.id, flush=True)

    launcher = DockerLauncher(store.launches, supervisor_id=supervisor_id, runtime=runtime)
    await launcher.run(spec, on_phase=on_phase)


anyio.run(main)
"""


@pytest.mark.docker
async def test_reaper_cleans_up_after_a_killed_supervisor(
    store: Store, supervisor_id: str, role_image_tag: str, runtime_root: RuntimeRoot, docker_sdk: Any
) -> None:
    argv = [
        sys.executable,
        "-c",
        CRASHING_SUPERVISOR,
        str(store.paths.root),
        supervisor_id,
        role_image_tag,
        str(runtime_root.base),
    ]
    with anyio.fail_after(60):
        async with await anyio.open_process(argv, cwd=REPO_ROOT) as process:
            assert process.stdout is not None
            output = b""
            async for chunk in process.stdout:  # (its log lines go to stdout too)
                output += chunk
                if b"RUNNING L-" in output and output.endswith(b"\n"):
                    break
            process.send_signal(signal.SIGKILL)  # the supervisor dies mid-launch: no clean-up at all
            await process.wait()
    found = [line.split()[1] for line in output.decode().splitlines() if line.startswith("RUNNING L-")]
    assert found, f"the supervisor never reported a running launch: {output!r}"
    launch_id = found[0]

    [left] = docker_sdk.containers.list(all=True, filters={"label": f"{LABEL_LAUNCH}={launch_id}"})
    assert left.status == "running"
    assert store.launches.get(launch_id).status is LaunchStatus.RUNNING
    assert (runtime_root.path / launch_suffix(launch_id)).is_dir()

    revoked: list[str] = []
    restarted = DockerLauncher(store.launches, supervisor_id=supervisor_id, runtime=runtime_root)
    try:
        with anyio.fail_after(60):
            report = await restarted.reap(on_orphan=revoked.append)
    finally:
        await restarted.aclose()
    assert report.failed_launches == (launch_id,) and revoked == [launch_id]
    assert report.removed_containers == (left.id,) and report.complete
    assert docker_sdk.containers.list(all=True, filters={"label": f"{LABEL_LAUNCH}={launch_id}"}) == []
    launch = store.launches.get(launch_id)
    assert (launch.status, launch.reason) == (LaunchStatus.FAILED, "supervisor_restarted")
    assert not (runtime_root.path / launch_suffix(launch_id)).exists()
