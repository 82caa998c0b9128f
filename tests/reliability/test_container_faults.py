"""The container fault matrix, run through the Supervisor, counted for the summary.

Each fault ends with a terminal launch status, every grant of the launch revoked, and no labelled
container left. Real Docker for what a container does (crash, hang, OOM, PID exhaustion, output
flood, removal from outside); the fault-injecting fake engine for the Docker API failing. The
one-by-one tests with exact reasons live in ``tests/e2e/test_oracle_launch.py``,
``tests/e2e/test_oracle_restart.py`` (the supervisor killed mid-launch) and
``tests/supervisor/test_launcher_*.py``; this reuses their payloads and counts outcomes.
"""

from __future__ import annotations

import gc
import warnings
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import anyio
import anyio.to_thread
import docker
import pytest

from store import LaunchFailed, Store
from store.launches._store import TERMINAL_STATUSES
from supervisor._supervisor import Supervisor
from supervisor.docker._client import DockerClient
from supervisor.docker._launcher import DockerLauncher
from supervisor.launch._spec import LABEL_LAUNCH, LaunchLimits, LaunchSpec, supervisor_id_for
from tests.e2e.conftest import ReviewScene
from tests.e2e.test_oracle_launch import _PYTHON, _hang
from tests.fakes.docker_engine import Behaviour, FakeDockerBackend, api_error, connection_reset
from tests.reliability.summary import Summary
from tests.supervisor.conftest import FAST_RETRY
from tests.supervisor.docker.test_launcher_docker import FORK_BOMB, MEMORY_HOG

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

MiB = 1024**2
_FLOOD = "import sys\nline = 'x' * 1023 + '\\n'\nfor _ in range(20_000): sys.stdout.write(line)\n"


def _run(code: str, **limits: Any) -> Callable[[LaunchSpec], LaunchSpec]:
    def transform(spec: LaunchSpec) -> LaunchSpec:
        changed = replace(spec, entrypoint=(_PYTHON, "-c", code), command=())
        if limits:
            changed = replace(changed, limits=LaunchLimits(cpus=0.5, nofile=256, **limits))
        return changed

    return transform


# kind -> (spec transform, deadline, expected statuses)
_REAL: dict[str, tuple[Callable[[LaunchSpec], LaunchSpec], float, set[str]]] = {
    "crash": (_run("import sys; sys.exit(3)"), 60, {"failed"}),
    "hang": (_hang, 3, {"timeout"}),
    "oom": (_run(MEMORY_HOG, memory_bytes=64 * MiB, pids=32), 60, {"failed"}),
    "pid_exhaustion": (_run(FORK_BOMB, memory_bytes=128 * MiB, pids=32), 60, {"failed"}),
    "output_flood": (_run(_FLOOD), 60, {"exited"}),
    "removed_from_outside": (_hang, 60, {"failed", "exited", "cancelled"}),
}


def _account(
    store: Store, docker_sdk: Any, launch_id: str, kind: str, expected: set[str], reliability: Summary
) -> None:
    launch = store.launches.get(launch_id)
    grants = store.db.read(
        lambda conn: conn.execute(
            "SELECT id, revoked_at FROM capability_grants WHERE launch_id = ?", (launch_id,)
        ).fetchall()
    )
    live = [g["id"] for g in grants if not g["revoked_at"]]
    leftovers = (
        docker_sdk.containers.list(all=True, filters={"label": f"{LABEL_LAUNCH}={launch_id}"})
        if docker_sdk
        else []
    )
    for container in leftovers:
        container.remove(force=True)
    reliability.faults[kind] += 1
    reliability.live_grants_after_end += len(live)
    reliability.leaked_containers += len(leftovers)
    reliability.fault_outcomes[kind] = (
        f"{launch.status} ({launch.reason}), grants revoked {len(grants) - len(live)}/{len(grants)}"
    )
    assert grants, "the launch had no grant"
    assert not live, f"{kind}: live grants after the launch ended"
    assert not leftovers, f"{kind}: containers left"
    assert launch.status in TERMINAL_STATUSES and str(launch.status) in expected, (
        kind,
        launch.to_dict(with_log=True),
    )


@pytest.mark.slow
@pytest.mark.parametrize("kind", list(_REAL))
async def test_real_container_faults_end_cleanly(
    kind: str, scene: ReviewScene, store: Store, docker_sdk: Any, role_image_tag: str, reliability: Summary
) -> None:
    transform, deadline, expected = _REAL[kind]
    running = anyio.Event()
    launch_ids: list[str] = []

    def on_phase(phase: str, details: dict[str, Any]) -> None:
        if "launch_id" in details and not launch_ids:
            launch_ids.append(details["launch_id"])
        if phase == "running":
            running.set()

    async def remove_from_outside() -> None:
        await running.wait()
        label = f"{LABEL_LAUNCH}={launch_ids[0]}"

        def remove() -> None:  # what `docker rm -f` does, from outside the supervisor
            # Its own client, opened and closed in this thread (no pooled socket left to the GC).
            outside = docker.from_env()
            try:
                for container in outside.containers.list(all=True, filters={"label": label}):
                    container.remove(force=True)
            finally:
                outside.close()

        await anyio.to_thread.run_sync(remove)

    async with Supervisor(store, spec_transform=transform) as supervisor:
        with anyio.fail_after(120):
            async with anyio.create_task_group() as tg:
                if kind == "removed_from_outside":
                    tg.start_soon(remove_from_outside)
                result = await supervisor.launch_role(
                    "memory_oracle", scene.proposal_id, timeout=deadline, on_phase=on_phase
                )
    with warnings.catch_warnings(record=True) as caught:  # an engine socket nobody closed
        warnings.simplefilter("always", ResourceWarning)
        gc.collect()
    leaked = [str(w.message) for w in caught if "docker.sock" in str(w.message)]
    _account(store, docker_sdk, result.launch.id, kind, expected, reliability)
    if leaked:
        reliability.problems.append(f"{kind}: {len(leaked)} Docker engine socket(s) left open")
    assert not leaked, leaked


_FAKE: dict[str, tuple[str, list[BaseException], set[str]]] = {
    "docker_api_transient": ("create", [connection_reset()], {"exited"}),
    "docker_api_start_failing": ("start", [api_error(500, "engine broke")] * 10, {"failed"}),
    "docker_api_wait_transient": ("wait", [connection_reset()], {"exited", "failed"}),
}


@pytest.mark.parametrize("kind", list(_FAKE))
async def test_docker_api_faults_end_cleanly(
    kind: str, scene: ReviewScene, store: Store, reliability: Summary
) -> None:
    operation, faults, expected = _FAKE[kind]
    fake = FakeDockerBackend(Behaviour(exit_code=0))
    fake.fail(operation, *faults)
    launcher = DockerLauncher(
        store.launches,
        supervisor_id=supervisor_id_for(store.paths.root),
        docker=DockerClient(lambda: fake, retry=FAST_RETRY),
    )
    async with Supervisor(store, launcher=launcher) as supervisor:
        with anyio.fail_after(60):
            try:
                await supervisor.launch_role("memory_oracle", scene.proposal_id, timeout=30)
            except* LaunchFailed:
                pass  # a start that keeps failing reaches the caller (in the serving task group)
    assert fake.containers == {}
    (launch,) = store.launches.find(proposal_id=scene.proposal_id)
    _account(store, None, launch.id, kind, expected, reliability)
