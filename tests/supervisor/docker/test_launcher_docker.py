"""Real containers from the role image: every hardening measure, proven from outside and inside.

From outside, ``docker inspect`` of the running container; from inside, a probe run as the container's
command. The hardened probe runs once per module and several tests read its results. Each test that
launches leaves no labelled container behind (checked by the autouse fixture in ``conftest.py``).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest

from store import LaunchFailed, ProjectPaths, Store, init_project, list_events, open_store
from store.launches._store import LaunchStatus
from supervisor.docker._launcher import DockerLauncher
from supervisor.launch._runtime_dir import RuntimeRoot
from supervisor.launch._spec import (
    LABEL_LAUNCH,
    LABEL_PROPOSAL,
    LABEL_ROLE,
    LABEL_SUPERVISOR,
    ContainerOutcome,
    LaunchLimits,
    LaunchPhase,
    LaunchSpec,
)
from tests.helpers import project_snapshot
from tests.supervisor.conftest import RequestLaunch

pytestmark = [pytest.mark.docker, pytest.mark.anyio]

PYTHON = ("python3", "-c")
MiB = 1024**2
TOKEN = "rt-test-token-" + "Zq9" * 12
LAUNCH_LABELS = (LABEL_SUPERVISOR, LABEL_LAUNCH, LABEL_PROPOSAL, LABEL_ROLE)

# Everything a role could try, reported as one JSON line. Nothing here may hang: sockets time out.
PROBE = r"""
import errno, hashlib, json, os, resource, socket, subprocess

def err(exc):
    return errno.errorcode.get(getattr(exc, "errno", None) or 0, type(exc).__name__)

out = {"uid": os.getuid(), "gid": os.getgid(), "groups": os.getgroups()}
status = dict(l.split(":", 1) for l in open("/proc/self/status").read().splitlines() if ":" in l)
for key in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs", "Seccomp"):
    out[key] = status[key].strip()
out["nofile"] = list(resource.getrlimit(resource.RLIMIT_NOFILE))
out["pid1"] = open("/proc/1/cmdline", "rb").read().split(b"\0")[0].decode()
try:
    os.setuid(0)
    out["setuid0"] = "ok"
except OSError as exc:
    out["setuid0"] = err(exc)

writable, refused = [], {}
for mount in sorted({line.split()[4] for line in open("/proc/self/mountinfo")}):
    path = os.path.join(mount, ".probe")
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        os.unlink(path)
        writable.append(mount)
    except OSError as exc:
        refused[mount] = err(exc)
out["writable_mounts"], out["refused_mounts"] = writable, refused
for path in ("/probe", "/etc/probe", "/opt/roundtable/venv/probe", "/run/roundtable/probe"):
    try:
        open(path, "w").close()
        out[path] = "ok"
    except OSError as exc:
        out[path] = err(exc)
script = "/tmp/probe.sh"
with open(script, "w") as f:
    f.write("#!/bin/sh\necho ran\n")
os.chmod(script, 0o755)
try:
    subprocess.run([script], check=False, timeout=5)
    out["exec_tmp"] = "ok"
except OSError as exc:
    out["exec_tmp"] = err(exc)

out["interfaces"] = sorted(os.listdir("/sys/class/net"))
for name, family, kind, target in (
    ("tcp_internet", socket.AF_INET, socket.SOCK_STREAM, ("1.1.1.1", 443)),
    ("tcp_gateway", socket.AF_INET, socket.SOCK_STREAM, ("172.17.0.1", 2375)),
    ("udp_dns", socket.AF_INET, socket.SOCK_DGRAM, ("8.8.8.8", 53)),
):
    s = socket.socket(family, kind)
    s.settimeout(3)
    try:
        s.connect(target)
        s.send(b"x")
        out[name] = "connected"
    except OSError as exc:
        out[name] = err(exc)
    finally:
        s.close()
try:
    socket.getaddrinfo("example.com", 443)
    out["dns"] = "resolved"
except OSError as exc:
    out["dns"] = type(exc).__name__

token = open("/run/roundtable/token").read()
channel = socket.socket(socket.AF_UNIX)
channel.settimeout(5)
channel.connect("/run/roundtable/mcp.sock")
channel.sendall(hashlib.sha256(token.encode()).hexdigest().encode())
channel.close()
out["launch_socket"] = "connected"
print("PROBE " + json.dumps(out), flush=True)
print("a hostile role prints its token:", token, flush=True)
"""


@dataclass(frozen=True)
class HardenedRun:
    """What the hardened probe launch produced."""

    outcome: ContainerOutcome
    inspect: dict[str, Any]
    probe: dict[str, Any]
    received: bytes
    runtime_dir: Path
    project: ProjectPaths
    limits: LaunchLimits


async def _serve_one(listener: Any, received: list[bytes]) -> None:
    async with await listener.accept() as stream:
        chunks = []
        try:
            while True:
                chunks.append(await stream.receive())
        except (anyio.EndOfStream, anyio.BrokenResourceError):
            pass
    received.append(b"".join(chunks))


async def _hardened_run(
    docker_sdk: Any, image: str, supervisor_id: str, project: ProjectPaths, runtime: RuntimeRoot
) -> HardenedRun:
    store = open_store(project)
    try:
        launch = store.launches.request(
            role="memory_oracle", agent_id="a", proposal_id="P-probe", image=image
        )
        rundir = runtime.create(launch.id)
        rundir.write_token_file(TOKEN)
        limits = LaunchLimits(memory_bytes=96 * MiB, cpus=0.5, pids=48, nofile=200)
        spec = LaunchSpec(
            launch_id=launch.id,
            role="memory_oracle",
            proposal_id="P-probe",
            image=image,
            entrypoint=PYTHON,
            command=(PROBE,),
            environment={"ROUNDTABLE_PROBE": "1"},
            runtime_dir=rundir.path,
            limits=limits,
            timeout_seconds=60,
            redact=frozenset({TOKEN}),
        )
        inspected: list[dict[str, Any]] = []

        async def on_phase(phase: LaunchPhase) -> None:
            if phase is LaunchPhase.RUNNING:
                container_id = store.launches.get(launch.id).container_id
                inspected.append(
                    await anyio.to_thread.run_sync(docker_sdk.api.inspect_container, container_id)
                )

        launcher = DockerLauncher(store.launches, supervisor_id=supervisor_id, runtime=runtime)
        received: list[bytes] = []
        listener = await anyio.create_unix_listener(rundir.socket_path)
        rundir.grant_socket()
        with anyio.fail_after(120):
            async with listener, anyio.create_task_group() as tg:
                tg.start_soon(_serve_one, listener, received)
                outcome = await launcher.run(spec, on_phase=on_phase)
                tg.cancel_scope.cancel()
        await launcher.aclose()
        lines = [line for line in outcome.log_tail.splitlines() if line.startswith("PROBE ")]
        assert lines, f"the probe printed no result; its log:\n{outcome.log_tail}"
        return HardenedRun(
            outcome=outcome,
            inspect=inspected[0],
            probe=json.loads(lines[0].removeprefix("PROBE ")),
            received=received[0] if received else b"",
            runtime_dir=rundir.path,
            project=project,
            limits=limits,
        )
    finally:
        store.close()


@pytest.fixture(scope="module")
def hardened(
    docker_sdk: Any, role_image_tag: str, supervisor_id: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[HardenedRun]:
    """One launch of :data:`PROBE` with a runtime directory, a token and a live launch socket."""
    project, _ = init_project(tmp_path_factory.mktemp("hardened") / "proj")
    base = Path(tempfile.mkdtemp(prefix="rtt-", dir="/tmp"))
    try:
        runtime = RuntimeRoot(supervisor_id, base=base / "rt")
        yield anyio.run(_hardened_run, docker_sdk, role_image_tag, supervisor_id, project, runtime)
    finally:
        shutil.rmtree(base, ignore_errors=True)


# -- 1. every measure, from docker inspect -------------------------------------------------------------


def test_inspect_shows_every_hardening_measure(hardened: HardenedRun, supervisor_id: str) -> None:
    host, config = hardened.inspect["HostConfig"], hardened.inspect["Config"]
    limits = hardened.limits
    assert config["User"] == "10001:10001"
    assert host["CapDrop"] == ["ALL"] and not host["CapAdd"]
    assert host["SecurityOpt"] == ["no-new-privileges:true"]  # default seccomp stays on (no override)
    assert host["Privileged"] is False
    assert host["ReadonlyRootfs"] is True
    assert host["Tmpfs"] == {"/tmp": "rw,noexec,nosuid,nodev,size=64m"}
    assert host["NetworkMode"] == "none"
    assert host["Memory"] == host["MemorySwap"] == limits.memory_bytes
    assert host["NanoCpus"] == 500_000_000
    assert host["PidsLimit"] == limits.pids
    assert {u["Name"]: (u["Soft"], u["Hard"]) for u in host["Ulimits"]} == {
        "nofile": (200, 200),
        "msgqueue": (0, 0),
    }
    assert host["Init"] is True
    assert host["IpcMode"] == "none"
    assert host["LogConfig"] == {"Type": "json-file", "Config": {"max-file": "1", "max-size": "1m"}}
    ours = {key: value for key, value in config["Labels"].items() if key in LAUNCH_LABELS}
    assert ours == {
        LABEL_SUPERVISOR: supervisor_id,
        LABEL_LAUNCH: hardened.outcome.launch_id,
        LABEL_PROPOSAL: "P-probe",
        LABEL_ROLE: "memory_oracle",
    }


def test_only_the_launch_directory_is_mounted_read_only(hardened: HardenedRun) -> None:
    mounts = hardened.inspect["Mounts"]
    assert [(m["Type"], m["Source"], m["Destination"], m["RW"]) for m in mounts] == [
        ("bind", str(hardened.runtime_dir), "/run/roundtable", False)
    ]
    assert not hardened.inspect["HostConfig"]["Binds"]
    text = json.dumps(hardened.inspect)
    assert "docker.sock" not in text
    assert str(hardened.project.root) not in text  # neither the project nor .roundtable
    assert TOKEN not in text  # the token travels as a file, never in the environment
    assert "ROUNDTABLE_PROBE=1" in hardened.inspect["Config"]["Env"]


# -- inside the container ------------------------------------------------------------------------------


def test_the_process_is_unprivileged(hardened: HardenedRun) -> None:
    probe = hardened.probe
    assert (probe["uid"], probe["gid"], probe["groups"]) == (10001, 10001, [10001])  # no extra groups
    for key in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
        assert int(probe[key], 16) == 0, key
    assert probe["NoNewPrivs"] == "1"
    assert probe["Seccomp"] == "2"  # the engine's default filter
    assert probe["setuid0"] == "EPERM"
    assert probe["nofile"] == [200, 200]
    assert probe["pid1"].endswith("docker-init")


def test_writing_to_root_fails_and_only_tmp_is_writable(hardened: HardenedRun) -> None:
    probe = hardened.probe
    assert probe["writable_mounts"] == ["/tmp"]
    assert probe["refused_mounts"]["/"] == "EROFS"
    assert probe["refused_mounts"]["/run/roundtable"] == "EROFS"
    for path in ("/probe", "/etc/probe", "/opt/roundtable/venv/probe", "/run/roundtable/probe"):
        assert probe[path] in ("EROFS", "EACCES"), path
    assert probe["exec_tmp"] == "EACCES"  # /tmp is noexec


def test_there_is_no_network_only_the_launch_socket(hardened: HardenedRun) -> None:
    probe = hardened.probe
    assert probe["interfaces"] == ["lo"]
    assert probe["tcp_internet"] == "ENETUNREACH"
    assert probe["tcp_gateway"] == "ENETUNREACH"
    assert probe["udp_dns"] == "ENETUNREACH"
    assert probe["dns"] == "gaierror"
    assert probe["launch_socket"] == "connected"
    # It read the token file (0400, uid 10001) and reached the supervisor through the socket.
    assert hardened.received == hashlib.sha256(TOKEN.encode()).hexdigest().encode()


def test_the_run_is_recorded_and_the_token_appears_nowhere(hardened: HardenedRun) -> None:
    outcome = hardened.outcome
    assert (outcome.status, outcome.exit_code, outcome.warnings) == (LaunchStatus.EXITED, 0, ())
    assert "a hostile role prints its token: [redacted]" in outcome.log_tail
    assert TOKEN not in outcome.log_tail
    snapshot = project_snapshot(hardened.project)
    assert TOKEN not in str(snapshot)


# -- limits and deadlines ------------------------------------------------------------------------------

FORK_BOMB = r"""
import os, sys, time
n = 0
try:
    while n < 1000:
        if os.fork() == 0:
            time.sleep(30)
            os._exit(0)
        n += 1
except OSError as exc:
    print("fork failed after", n, "children:", exc, flush=True)
    sys.exit(3)
print("no limit after", n, "children", flush=True)
"""

SLEEPER = "import time; time.sleep(120)"

MEMORY_HOG = r"""
chunks = []
while True:
    chunks.append(bytearray(8 * 1024 * 1024))
"""


@pytest.fixture
async def launcher(store: Store, supervisor_id: str) -> AsyncIterator[DockerLauncher]:
    """A launcher over the real engine."""
    launcher = DockerLauncher(store.launches, supervisor_id=supervisor_id)
    try:
        yield launcher
    finally:
        await launcher.aclose()


def _labelled(docker_sdk: Any, launch_id: str) -> list[Any]:
    return list(docker_sdk.containers.list(all=True, filters={"label": f"{LABEL_LAUNCH}={launch_id}"}))


async def test_a_noop_role_exits_cleanly(
    launcher: DockerLauncher, request_launch: RequestLaunch, role_image_tag: str, store: Store
) -> None:
    spec = request_launch(image=role_image_tag, command=("--version",))
    with anyio.fail_after(60):
        outcome = await launcher.run(spec)
    assert (outcome.status, outcome.exit_code) == (LaunchStatus.EXITED, 0)
    assert outcome.log_tail.strip() == f"roundtable-role {role_image_tag.split(':')[1]}"
    types = [e.type for e in store.db.read(lambda conn: list_events(conn, limit=100))]
    assert types == ["role.launch_requested", "role.container_created", "role.started", "role.exited"]


async def test_a_fork_bomb_hits_the_pid_limit_and_the_supervisor_lives_on(
    launcher: DockerLauncher, request_launch: RequestLaunch, role_image_tag: str, store: Store
) -> None:
    limits = LaunchLimits(memory_bytes=128 * MiB, cpus=0.5, pids=32, nofile=256)
    spec = request_launch(image=role_image_tag, entrypoint=PYTHON, command=(FORK_BOMB,), limits=limits)
    with anyio.fail_after(60):
        outcome = await launcher.run(spec)
    assert (outcome.status, outcome.reason, outcome.exit_code) == (LaunchStatus.FAILED, "nonzero_exit", 3)
    assert "fork failed after" in outcome.log_tail and "Resource temporarily unavailable" in outcome.log_tail
    children = int(outcome.log_tail.split("fork failed after")[1].split()[0])
    assert 0 < children < limits.pids
    assert store.launches.get(spec.launch_id).status is LaunchStatus.FAILED
    await launcher.docker.ping()  # still here, still talking to the engine


async def test_a_memory_hog_is_oom_killed_and_recorded(
    launcher: DockerLauncher, request_launch: RequestLaunch, role_image_tag: str, store: Store
) -> None:
    limits = LaunchLimits(memory_bytes=64 * MiB, cpus=0.5, pids=32, nofile=256)
    spec = request_launch(image=role_image_tag, entrypoint=PYTHON, command=(MEMORY_HOG,), limits=limits)
    with anyio.fail_after(60):
        outcome = await launcher.run(spec)
    assert (outcome.status, outcome.reason, outcome.oom_killed) == (LaunchStatus.FAILED, "oom", True)
    record = store.launches.get(spec.launch_id)
    assert (record.status, record.reason, record.exit_code) == (LaunchStatus.FAILED, "oom", 137)


async def test_a_role_that_outlives_its_deadline_is_killed(
    launcher: DockerLauncher, request_launch: RequestLaunch, role_image_tag: str, store: Store
) -> None:
    spec = request_launch(
        image=role_image_tag,
        entrypoint=PYTHON,
        command=(SLEEPER,),
        timeout_seconds=1.5,
    )
    started = anyio.current_time()
    with anyio.fail_after(60):
        outcome = await launcher.run(spec)
    assert anyio.current_time() - started < 30
    assert (outcome.status, outcome.reason, outcome.exit_code) == (
        LaunchStatus.TIMEOUT,
        "deadline_exceeded",
        137,
    )
    last = store.db.read(lambda conn: list_events(conn, limit=100))[-1]
    assert (last.type, last.payload["status"]) == ("role.failed", "timeout")


async def test_cancelling_the_awaiting_task_kills_and_removes_the_container(
    launcher: DockerLauncher,
    request_launch: RequestLaunch,
    role_image_tag: str,
    store: Store,
    docker_sdk: Any,
) -> None:
    spec = request_launch(
        image=role_image_tag,
        entrypoint=PYTHON,
        command=(SLEEPER,),
        timeout_seconds=120,
    )
    running = anyio.Event()
    seen: list[list[Any]] = []

    def on_phase(phase: LaunchPhase) -> None:
        if phase is LaunchPhase.RUNNING:
            seen.append(_labelled(docker_sdk, spec.launch_id))
            running.set()

    with anyio.fail_after(60):
        async with anyio.create_task_group() as tg:
            tg.start_soon(partial(launcher.run, spec, on_phase=on_phase))
            await running.wait()
            tg.cancel_scope.cancel()
    assert [c.status for c in seen[0]] == ["running"]
    assert _labelled(docker_sdk, spec.launch_id) == []
    record = store.launches.get(spec.launch_id)
    assert (record.status, record.reason) == (LaunchStatus.CANCELLED, "cancelled")


async def test_a_missing_image_fails_cleanly(
    launcher: DockerLauncher, request_launch: RequestLaunch, store: Store, docker_sdk: Any
) -> None:
    spec = request_launch(image="roundtable-role:does-not-exist")
    with pytest.raises(LaunchFailed, match="roundtable image build"):
        await launcher.run(spec)
    assert _labelled(docker_sdk, spec.launch_id) == []
    assert store.launches.get(spec.launch_id).reason == "create_failed"
