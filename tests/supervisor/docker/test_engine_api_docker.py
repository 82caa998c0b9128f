"""The lean Engine API backend against the real engine: every call, every hardening field, and the
same container settings as the docker SDK backend's.

A container is created from a real :class:`LaunchSpec` through ``container_kwargs`` and inspected:
each hardening measure must have landed. The differential test creates the same kwargs through both
backends and compares what the engine recorded.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from store import LaunchFailed
from supervisor.docker._backend import EngineApiError
from supervisor.docker._client import DockerClient
from supervisor.docker._engine_api import EngineApiBackend
from supervisor.docker._sdk import SdkDockerBackend
from supervisor.launch._runtime_dir import CONTAINER_MOUNT
from supervisor.launch._spec import (
    LABEL_LAUNCH,
    LABEL_SUPERVISOR,
    TMPFS_OPTIONS,
    LaunchLimits,
    LaunchSpec,
    container_kwargs,
)
from tests.supervisor.conftest import FAST_RETRY

pytestmark = pytest.mark.docker

IMAGE = "roundtable-role:0.1.0"
MiB = 1024**2
LIMITS = LaunchLimits(memory_bytes=96 * MiB, cpus=0.5, pids=64, nofile=512)


def _spec(runtime_dir: Path, *, command: tuple[str, ...] = ("--version",)) -> LaunchSpec:
    return LaunchSpec(
        launch_id=f"L-20260101T000000000000Z-{secrets.token_hex(6)}",
        role="memory_oracle",
        proposal_id="P-1",
        image=IMAGE,
        entrypoint=("python3", "-c") if command != ("--version",) else None,
        command=command,
        environment={"ROUNDTABLE_ROLE": "memory_oracle"},
        runtime_dir=runtime_dir,
        limits=LIMITS,
    )


@pytest.fixture
def lean() -> Iterator[EngineApiBackend]:
    backend = EngineApiBackend()
    try:
        yield backend
    finally:
        backend.close()


def test_a_created_container_carries_every_hardening_measure(
    lean: EngineApiBackend, tmp_path: Path, supervisor_id: str
) -> None:
    spec = _spec(tmp_path)
    kwargs = container_kwargs(spec, supervisor_id)
    container = lean.create(kwargs)
    try:
        document = lean.inspect(container)
        host, config = document["HostConfig"], document["Config"]
        assert config["User"] == "10001:10001"
        assert host["CapDrop"] == ["ALL"] and not host.get("CapAdd")
        assert host["ReadonlyRootfs"] is True and host["Privileged"] is False
        assert host["SecurityOpt"] == ["no-new-privileges:true"]
        assert host["NetworkMode"] == "none" and host["IpcMode"] == "none"
        assert host["Memory"] == host["MemorySwap"] == 96 * MiB
        assert host["NanoCpus"] == 500_000_000 and host["PidsLimit"] == 64
        assert {u["Name"]: (u["Soft"], u["Hard"]) for u in host["Ulimits"]} == {
            "nofile": (512, 512),
            "msgqueue": (0, 0),
        }
        assert host["Tmpfs"] == {"/tmp": TMPFS_OPTIONS}
        assert host["Init"] is True
        assert host["LogConfig"] == {"Type": "json-file", "Config": {"max-size": "1m", "max-file": "1"}}
        assert [(m["Type"], m["Source"], m["Destination"], m["RW"]) for m in document["Mounts"]] == [
            ("bind", str(tmp_path), CONTAINER_MOUNT, False)
        ]
        assert config["Labels"][LABEL_SUPERVISOR] == supervisor_id
        assert config["Labels"][LABEL_LAUNCH] == spec.launch_id
        assert "ROUNDTABLE_ROLE=memory_oracle" in config["Env"]
        assert document["Name"] == "/" + kwargs["name"]
    finally:
        lean.remove(container)


def test_start_wait_logs_kill_remove_and_list(
    lean: EngineApiBackend, tmp_path: Path, supervisor_id: str
) -> None:
    script = (
        "import sys\n"
        "for i in range(50):\n"
        "    print(f'out {i}', flush=True)\n"
        "    print(f'err {i}', file=sys.stderr, flush=True)\n"
        "sys.exit(3)\n"
    )
    spec = _spec(tmp_path, command=(script,))
    container = lean.create(container_kwargs(spec, supervisor_id))
    try:
        lean.start(container)
        assert lean.wait(container, 30) == 3
        text = b"".join(lean.logs(container, tail_lines=1000)).decode()
        lines = text.splitlines()
        assert len(lines) == 100 and "out 0" in lines and "err 49" in lines  # both streams, unframed
        tail = b"".join(lean.logs(container, tail_lines=4))
        assert len(tail.splitlines()) == 4 and b"49\n" in tail
        sdk = SdkDockerBackend()
        try:  # the engine orders the two streams by its own clock: the SDK reads the same tail
            assert b"".join(sdk.logs(container, tail_lines=4)) == tail
            assert b"".join(sdk.logs(container, tail_lines=1000)).decode() == text
        finally:
            sdk.close()
        listed = lean.list_labelled(f"{LABEL_LAUNCH}={spec.launch_id}")
        assert [(row.id, row.state) for row in listed] == [(container, "exited")]
        assert listed[0].labels[LABEL_SUPERVISOR] == supervisor_id
    finally:
        lean.remove(container)
    with pytest.raises(EngineApiError) as gone:
        lean.remove(container)
    assert gone.value.status == 404
    assert lean.list_labelled(f"{LABEL_LAUNCH}={spec.launch_id}") == []


def test_the_client_runs_a_long_container_to_kill_and_adopts_on_409(
    tmp_path: Path, supervisor_id: str
) -> None:
    spec = _spec(tmp_path, command=("import time; time.sleep(60)",))
    kwargs = container_kwargs(spec, supervisor_id)
    client = DockerClient(EngineApiBackend, retry=FAST_RETRY)

    async def main() -> None:
        container = await client.create(kwargs)
        try:
            assert await client.create(kwargs) == container  # 409 by name: the same launch adopts it
            await client.start(container)
            assert await client.wait(container, 0.3) is None  # still running: the wait times out
            await client.kill(container)
            assert await client.wait(container, 30) == 137
            tail = await client.logs(container, max_bytes=5, tail_lines=10)
            assert tail == b""
            await client.kill(container)  # not running: fine
        finally:
            assert await client.remove(container) is True
            assert await client.remove(container) is False  # gone: fine
        await client.aclose()

    anyio.run(main)


def test_logs_are_capped_to_max_bytes(tmp_path: Path, supervisor_id: str) -> None:
    spec = _spec(tmp_path, command=("print('x' * 5000 + 'END')",))
    client = DockerClient(EngineApiBackend, retry=FAST_RETRY)

    async def main() -> bytes:
        container = await client.create(container_kwargs(spec, supervisor_id))
        try:
            await client.start(container)
            assert await client.wait(container, 30) == 0
            return await client.logs(container, max_bytes=10, tail_lines=100)
        finally:
            await client.remove(container)
            await client.aclose()

    assert anyio.run(main) == b"xxxxxxEND\n"


def test_a_missing_image_is_launch_failed_and_not_retried(tmp_path: Path, supervisor_id: str) -> None:
    kwargs = {**container_kwargs(_spec(tmp_path), supervisor_id), "image": "roundtable-no-such:0"}
    client = DockerClient(EngineApiBackend, retry=FAST_RETRY)

    async def main() -> LaunchFailed:
        try:
            with pytest.raises(LaunchFailed) as failed:
                await client.create(kwargs)
            return failed.value
        finally:
            await client.aclose()

    error = anyio.run(main)
    assert "image not found" in error.message and error.details["status"] == 404


def test_unknown_create_arguments_are_refused(lean: EngineApiBackend) -> None:
    with pytest.raises(ValueError, match="cap_add_everything"):
        lean.create({"image": IMAGE, "cap_add_everything": True})


# -- the differential test ------------------------------------------------------------------------


def _settings(document: dict[str, Any]) -> dict[str, Any]:
    host, config = document["HostConfig"], document["Config"]
    wanted_host = (
        "Privileged CapAdd CapDrop SecurityOpt ReadonlyRootfs Tmpfs NetworkMode Memory MemorySwap "
        "NanoCpus CpuShares PidsLimit Ulimits IpcMode Init Mounts Binds LogConfig Devices AutoRemove"
    ).split()
    wanted_config = "Image Cmd Entrypoint User Env Labels Tty OpenStdin AttachStdin WorkingDir".split()
    return {
        "host": {key: host.get(key) for key in wanted_host},
        "config": {key: config.get(key) for key in wanted_config},
        "mounts": [{k: v for k, v in m.items() if k != "Propagation"} for m in document["Mounts"]],
    }


@pytest.mark.parametrize("pool_owner", [None, "pool-owner"])
def test_both_backends_create_the_same_container(
    lean: EngineApiBackend, tmp_path: Path, supervisor_id: str, pool_owner: str | None
) -> None:
    sdk = SdkDockerBackend()
    spec = _spec(tmp_path)
    kwargs = container_kwargs(spec, supervisor_id, pool_owner=pool_owner)
    created = []
    try:
        created.append(lean.create({**kwargs, "name": kwargs["name"] + "-lean"}))
        created.append(sdk.create({**kwargs, "name": kwargs["name"] + "-sdk"}))
        lean_settings, sdk_settings = (_settings(lean.inspect(c)) for c in created)
        assert lean_settings == sdk_settings
        assert lean_settings["host"]["CapDrop"] == ["ALL"]  # the comparison compared something
        assert lean_settings["host"]["CpuShares"] == (2 if pool_owner else 0)
    finally:
        for container in created:
            lean.remove(container)
        sdk.close()
