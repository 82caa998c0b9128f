"""A supervisor killed mid-launch, then restarted: the reaper cleans up. Two supervisors on one
project: neither reaps the other's live launch."""

from __future__ import annotations

import json
import os
import signal
import sys
from dataclasses import replace
from typing import Any

import anyio
import pytest
from anyio.streams.text import TextReceiveStream
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from capabilities.serving._transports import serving
from store import Store
from store.launches._store import LaunchStatus
from supervisor._supervisor import Supervisor
from supervisor.launch._spec import LABEL_LAUNCH, LaunchSpec
from tests.e2e.conftest import ReviewScene, reopen, write_config

pytestmark = [pytest.mark.anyio, pytest.mark.docker]


def _hanging_model(called: anyio.Event, release: anyio.Event) -> Starlette:
    async def complete(request: Request) -> JSONResponse:
        called.set()
        await release.wait()
        return JSONResponse({"error": "released"}, status_code=503)

    return Starlette(routes=[Route("/v1/chat/completions", complete, methods=["POST"])])


async def _phases(stream: Any) -> Any:
    buffer = ""
    async for chunk in TextReceiveStream(stream):
        buffer += chunk
        while "\n" in buffer:
            line, buffer = buffer.split("\n", 1)
            try:
                yield json.loads(line)
            except ValueError:
                continue


async def test_supervisor_killed_mid_launch_is_reaped_on_restart(
    scene: ReviewScene, store: Store, docker_sdk: Any, role_image_tag: str
) -> None:
    called, release = anyio.Event(), anyio.Event()
    async with serving(_hanging_model(called, release), host="127.0.0.1", port=0) as address:
        write_config(scene.paths, {"[providers.openai]base_url": json.dumps(f"{address.base_url}/v1")})
        argv = [
            sys.executable,
            "-m",
            "supervisor",
            "--root",
            str(scene.paths.root),
            "oracle",
            "launch",
            scene.proposal_id,
            "--wait",
            "--json",
            "--provider",
            "openai",
            "--timeout",
            "300",
        ]
        with anyio.fail_after(120):
            async with await anyio.open_process(argv) as process:
                assert process.stderr is not None
                launch_id = ""
                async for phase in _phases(process.stderr):
                    launch_id = phase.get("launch_id", launch_id)
                    if phase.get("phase") == "running":
                        break
                await called.wait()  # the role is mid-conversation with the model
                os.kill(process.pid, signal.SIGKILL)
                await process.wait()
        release.set()

    (launch,) = store.launches.find(proposal_id=scene.proposal_id)
    assert launch.id == launch_id
    assert launch.status is LaunchStatus.RUNNING  # nobody recorded an end: the supervisor died

    restarted = reopen(scene.paths)
    try:
        async with Supervisor(restarted):
            pass
        after = restarted.launches.get(launch_id)
        grants = restarted.grants.list_grants(proposal_id=scene.proposal_id)
    finally:
        restarted.close()
    assert after.status is LaunchStatus.FAILED
    assert after.reason == "supervisor_restarted"
    assert grants
    assert all(grant.revoked_at for grant in grants)
    assert docker_sdk.containers.list(all=True, filters={"label": f"{LABEL_LAUNCH}={launch_id}"}) == []


async def test_a_second_supervisor_leaves_a_live_launch_alone(
    scene: ReviewScene, store: Store, docker_sdk: Any, role_image_tag: str
) -> None:
    running = anyio.Event()

    def hang(spec: LaunchSpec) -> LaunchSpec:
        forever = "import time\nwhile True: time.sleep(60)"
        return replace(spec, entrypoint=("/opt/roundtable/venv/bin/python", "-c", forever), command=())

    def on_phase(phase: str, details: dict[str, Any]) -> None:
        if phase == "running":
            running.set()

    async with Supervisor(store, spec_transform=hang) as first:
        with anyio.fail_after(120):
            async with anyio.create_task_group() as tg:
                tg.start_soon(
                    lambda: first.launch_role("memory_oracle", scene.proposal_id, on_phase=on_phase)
                )
                await running.wait()
                (launch,) = store.launches.find(proposal_id=scene.proposal_id)
                other = reopen(scene.paths)
                try:
                    async with Supervisor(other):  # its start-up reaps orphans only
                        pass
                    assert other.launches.get(launch.id).status is LaunchStatus.RUNNING
                finally:
                    other.close()
                assert docker_sdk.containers.list(filters={"label": f"{LABEL_LAUNCH}={launch.id}"})
                tg.cancel_scope.cancel()
    assert store.launches.get(launch.id).status is LaunchStatus.CANCELLED
