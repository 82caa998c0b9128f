"""The launcher's failure paths, driven by the fault-injecting fake engine (no Docker needed).

What a container can or cannot do is proven with real containers in ``test_launcher_docker.py``;
here the fake makes the engine fail exactly where a test wants it to.
"""

from __future__ import annotations

import gc
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import docker.errors
import pytest

from store import Conflict, DockerUnavailable, InvalidArgument, LaunchFailed, Store, list_events
from store.config import RoleConfig
from store.launches._store import MAX_LOG_TAIL_BYTES, LaunchStatus
from supervisor.docker._client import DockerClient, is_transient
from supervisor.docker._launcher import DockerLauncher
from supervisor.docker._sdk import SdkDockerBackend
from supervisor.launch._spec import (
    CONTAINER_USER,
    LABEL_LAUNCH,
    LABEL_PROPOSAL,
    LABEL_ROLE,
    LABEL_SUPERVISOR,
    TMPFS_OPTIONS,
    LaunchLimits,
    LaunchPhase,
    LaunchSpec,
    container_kwargs,
    parse_memory,
)
from tests.fakes.docker_engine import (
    AfterEffect,
    Behaviour,
    FakeDockerBackend,
    api_error,
    connection_refused,
    connection_reset,
    image_not_found,
)
from tests.helpers import project_snapshot
from tests.supervisor.conftest import FAST_RETRY, RequestLaunch

pytestmark = pytest.mark.anyio


def _event_types(store: Store) -> list[str]:
    return [e.type for e in store.db.read(lambda conn: list_events(conn, limit=1000))]


# -- the container settings ----------------------------------------------------------------------------


def test_container_kwargs_carry_every_hardening_measure(tmp_path: Path) -> None:
    spec = LaunchSpec(
        launch_id="L-20260101T000000000000Z-0123456789ab",
        role="memory_oracle",
        proposal_id="P-1",
        image="roundtable-role:0.1.0",
        command=("--version",),
        environment={"ROUNDTABLE_ROLE": "memory_oracle"},
        runtime_dir=tmp_path,
        limits=LaunchLimits(memory_bytes=parse_memory("96m"), cpus=0.5, pids=64, nofile=512),
    )
    kwargs = container_kwargs(spec, "rt-sup")
    assert kwargs["user"] == CONTAINER_USER == "10001:10001"
    assert kwargs["cap_drop"] == ["ALL"] and "cap_add" not in kwargs
    assert kwargs["security_opt"] == ["no-new-privileges:true"]
    assert kwargs["privileged"] is False
    assert kwargs["read_only"] is True
    assert kwargs["tmpfs"] == {"/tmp": TMPFS_OPTIONS} and TMPFS_OPTIONS == "rw,noexec,nosuid,nodev,size=64m"
    assert kwargs["network_mode"] == "none"
    assert kwargs["mem_limit"] == kwargs["memswap_limit"] == 96 * 1024**2
    assert kwargs["nano_cpus"] == 500_000_000 and kwargs["pids_limit"] == 64
    assert [dict(u) for u in kwargs["ulimits"]] == [
        {"Name": "nofile", "Soft": 512, "Hard": 512},
        {"Name": "msgqueue", "Soft": 0, "Hard": 0},
    ]
    assert kwargs["ipc_mode"] == "none"
    assert kwargs["init"] is True
    assert [dict(m) for m in kwargs["mounts"]] == [
        {"Target": "/run/roundtable", "Source": str(tmp_path), "Type": "bind", "ReadOnly": True}
    ]
    assert "volumes" not in kwargs and "devices" not in kwargs
    assert kwargs["labels"] == {
        LABEL_SUPERVISOR: "rt-sup",
        LABEL_LAUNCH: spec.launch_id,
        LABEL_PROPOSAL: "P-1",
        LABEL_ROLE: "memory_oracle",
    }
    assert kwargs["name"] == f"roundtable-{spec.launch_id}"


@pytest.mark.parametrize(
    "bad",
    [
        {"environment": {"OPENAI_API_KEY": "sk-..."}},
        {"environment": {"ROUNDTABLE_TOKEN": "x"}},
        {"environment": {"BAD NAME": "x"}},
        {"command": ("a\x00b",)},
        {"timeout_seconds": 0},
        {"timeout_seconds": float("nan")},
        {"runtime_dir": Path("relative")},
        {"image": " "},
    ],
)
def test_specs_refuse_secrets_in_the_environment_and_bad_values(bad: dict[str, Any]) -> None:
    fields: dict[str, Any] = {"launch_id": "L-x", "role": "r", "proposal_id": "P", "image": "i"}
    with pytest.raises(InvalidArgument):
        LaunchSpec(**{**fields, **bad})


@pytest.mark.parametrize(
    ("text", "expected"), [("512m", 512 * 1024**2), ("1g", 1024**3), ("64MiB", 64 * 1024**2)]
)
def test_parse_memory(text: str | int, expected: int) -> None:
    assert parse_memory(text) == expected


@pytest.mark.parametrize(
    "text", ["1" * 400 + "m", "1" * 16, "²m", "١٢٣٤٥٦٧٨٩g", "5m", 2**63, "9" * 15 + "g", "1.5.5m"]
)
def test_parse_memory_refuses_what_is_no_size_the_engine_takes(text: str | int) -> None:
    # "1" * 400 was float("inf") and then an OverflowError; Arabic-Indic digits were accepted.
    with pytest.raises(InvalidArgument, match="memory limit"):
        parse_memory(text)


# -- runs that reach the end ---------------------------------------------------------------------------


async def test_clean_exit_is_recorded_and_the_container_removed(
    fake_launcher: DockerLauncher, fake: FakeDockerBackend, request_launch: RequestLaunch, store: Store
) -> None:
    fake.behaviour = Behaviour(exit_code=0, output=b"roundtable-role 0.1.0\n")
    spec = request_launch()
    phases: list[LaunchPhase] = []

    async def on_phase(phase: LaunchPhase) -> None:  # async hooks are awaited
        phases.append(phase)

    outcome = await fake_launcher.run(spec, on_phase=on_phase)
    assert (outcome.status, outcome.exit_code, outcome.reason) == (LaunchStatus.EXITED, 0, None)
    assert outcome.log_tail == "roundtable-role 0.1.0\n" and not outcome.warnings
    assert phases == list(LaunchPhase)
    assert fake.containers == {}
    assert fake.calls == ["create", "start", "wait", "inspect", "logs", "remove"]
    record = store.launches.get(spec.launch_id)
    assert record.status is LaunchStatus.EXITED and record.container_id == outcome.container_id
    assert record.log_tail == outcome.log_tail and record.started_at and record.ended_at
    assert _event_types(store) == [
        "role.launch_requested",
        "role.container_created",
        "role.started",
        "role.exited",
    ]
    assert fake_launcher.running == frozenset()


async def test_container_id_is_committed_before_start(
    fake_launcher: DockerLauncher, fake: FakeDockerBackend, request_launch: RequestLaunch, store: Store
) -> None:
    spec = request_launch()
    seen: list[tuple[str, str | None, int]] = []

    def on_phase(phase: LaunchPhase) -> None:
        if phase is LaunchPhase.CREATED:
            record = store.launches.get(spec.launch_id)  # a fresh read of the committed row
            seen.append((record.status, record.container_id, fake.count("start")))

    await fake_launcher.run(spec, on_phase=on_phase)
    [(status, container_id, starts)] = seen
    assert status == "starting" and container_id and starts == 0


@pytest.mark.parametrize(
    ("behaviour", "status", "reason", "exit_code"),
    [
        (Behaviour(exit_code=3), LaunchStatus.FAILED, "nonzero_exit", 3),
        (Behaviour(exit_code=137, oom_killed=True), LaunchStatus.FAILED, "oom", 137),
    ],
)
async def test_unsuccessful_exits_are_failed_with_their_reason(
    fake_launcher: DockerLauncher,
    fake: FakeDockerBackend,
    request_launch: RequestLaunch,
    store: Store,
    behaviour: Behaviour,
    status: LaunchStatus,
    reason: str,
    exit_code: int,
) -> None:
    fake.behaviour = behaviour
    spec = request_launch()
    outcome = await fake_launcher.run(spec)
    assert (outcome.status, outcome.reason, outcome.exit_code) == (status, reason, exit_code)
    assert outcome.oom_killed is behaviour.oom_killed
    assert store.launches.get(spec.launch_id).reason == reason
    assert _event_types(store)[-1] == "role.failed" and fake.containers == {}


async def test_deadline_kills_and_records_timeout(
    fake_launcher: DockerLauncher, fake: FakeDockerBackend, request_launch: RequestLaunch, store: Store
) -> None:
    fake.behaviour = Behaviour(exit_code=None)  # runs until killed
    spec = request_launch(timeout_seconds=0.2)
    with anyio.fail_after(10):
        outcome = await fake_launcher.run(spec)
    assert (outcome.status, outcome.reason, outcome.exit_code) == (
        LaunchStatus.TIMEOUT,
        "deadline_exceeded",
        137,
    )
    assert fake.count("kill") == 1 and fake.containers == {}
    last = store.db.read(lambda conn: list_events(conn, limit=1000))[-1]
    assert last.type == "role.failed" and last.payload["status"] == "timeout"


async def test_cancelling_the_awaiting_task_removes_the_container(
    fake_launcher: DockerLauncher, fake: FakeDockerBackend, request_launch: RequestLaunch, store: Store
) -> None:
    fake.behaviour = Behaviour(exit_code=None)
    spec = request_launch(timeout_seconds=60)
    running = anyio.Event()
    phases: list[LaunchPhase] = []

    def on_phase(phase: LaunchPhase) -> None:
        phases.append(phase)
        if phase is LaunchPhase.RUNNING:
            running.set()

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(partial(fake_launcher.run, spec, on_phase=on_phase))
            await running.wait()
            tg.cancel_scope.cancel()
    record = store.launches.get(spec.launch_id)
    assert record.status is LaunchStatus.CANCELLED and record.reason == "cancelled"
    assert fake.containers == {} and fake.count("remove") == 1
    assert phases[-2:] == [LaunchPhase.STOPPED, LaunchPhase.ENDED]
    assert fake_launcher.running == frozenset()


async def test_logs_are_bounded_and_secrets_redacted(
    fake_launcher: DockerLauncher, fake: FakeDockerBackend, request_launch: RequestLaunch, store: Store
) -> None:
    secret = "tok_" + "s3cr3t" * 8
    noise = b"".join(b"line %d ..........................................\n" % i for i in range(5000))
    fake.behaviour = Behaviour(exit_code=0, output=noise + f"bearer {secret} end\n".encode())
    spec = request_launch(redact=frozenset({secret}))
    assert secret not in repr(spec)
    outcome = await fake_launcher.run(spec)
    assert len(outcome.log_tail.encode()) <= MAX_LOG_TAIL_BYTES
    assert outcome.log_tail.endswith("bearer [redacted] end\n")
    assert secret not in str(project_snapshot(store.paths))


# -- runs that fail ------------------------------------------------------------------------------------


async def test_start_failing_after_create_leaves_no_container(
    fake_launcher: DockerLauncher, fake: FakeDockerBackend, request_launch: RequestLaunch, store: Store
) -> None:
    fake.fail("start", api_error(400, "OCI runtime create failed: exec: no such file"))
    spec = request_launch()
    phases: list[LaunchPhase] = []
    with pytest.raises(LaunchFailed, match="OCI runtime create failed"):
        await fake_launcher.run(spec, on_phase=phases.append)
    assert fake.containers == {} and fake.count("start") == 1  # a 400 is not retried
    record = store.launches.get(spec.launch_id)
    assert (record.status, record.reason) == (LaunchStatus.FAILED, "start_failed")
    assert record.error and "OCI runtime" in record.error
    assert _event_types(store) == ["role.launch_requested", "role.container_created", "role.failed"]
    assert phases == [LaunchPhase.CREATING, LaunchPhase.CREATED, LaunchPhase.STOPPED, LaunchPhase.ENDED]


async def test_transient_errors_are_retried(
    fake_launcher: DockerLauncher, fake: FakeDockerBackend, request_launch: RequestLaunch
) -> None:
    fake.fail("create", api_error(503, "engine busy"), connection_reset())
    fake.fail("start", api_error(500, "transient"), api_error(502, "bad gateway"))
    fake.fail("wait", connection_reset())
    fake.fail("remove", api_error(504, "timeout"))
    outcome = await fake_launcher.run(request_launch())
    assert outcome.status is LaunchStatus.EXITED and not outcome.warnings
    assert (fake.count("create"), fake.count("start"), fake.count("wait"), fake.count("remove")) == (
        3,
        3,
        2,
        2,
    )
    assert fake.containers == {}


@pytest.mark.parametrize(
    "error",
    [
        image_not_found("roundtable-role:0.1.0"),
        api_error(400, "invalid reference format"),
        api_error(409, "no"),
    ],
)
async def test_permanent_errors_are_not_retried(
    fake_launcher: DockerLauncher,
    fake: FakeDockerBackend,
    request_launch: RequestLaunch,
    store: Store,
    error: docker.errors.APIError,
) -> None:
    fake.fail("create", error)
    spec = request_launch()
    with pytest.raises(LaunchFailed) as caught:
        await fake_launcher.run(spec)
    assert fake.count("create") == 1 and fake.containers == {}
    if isinstance(error, docker.errors.ImageNotFound):
        assert "roundtable image build" in caught.value.message
    record = store.launches.get(spec.launch_id)
    assert (record.status, record.reason, record.container_id) == (LaunchStatus.FAILED, "create_failed", None)


async def test_transient_errors_that_persist_fail_after_bounded_attempts(
    fake_launcher: DockerLauncher, fake: FakeDockerBackend, request_launch: RequestLaunch, store: Store
) -> None:
    fake.fail("create", *[api_error(500, "still broken")] * 5)
    spec = request_launch()
    with pytest.raises(LaunchFailed, match="500"):
        await fake_launcher.run(spec)
    assert fake.count("create") == FAST_RETRY.attempts
    assert store.launches.get(spec.launch_id).status is LaunchStatus.FAILED


async def test_an_engine_that_went_away_is_docker_unavailable(
    fake_launcher: DockerLauncher, fake: FakeDockerBackend, request_launch: RequestLaunch, store: Store
) -> None:
    fake.fail("create", *[connection_refused()] * 5)
    spec = request_launch()
    with pytest.raises(DockerUnavailable, match="cannot reach the Docker engine") as caught:
        await fake_launcher.run(spec)
    assert caught.value.to_dict()["code"] == "docker_unavailable"
    assert store.launches.get(spec.launch_id).reason == "docker_unavailable"


async def test_a_create_whose_answer_was_lost_adopts_its_container(
    fake_launcher: DockerLauncher, fake: FakeDockerBackend, request_launch: RequestLaunch
) -> None:
    fake.fail("create", AfterEffect(connection_reset()))  # created, but the answer never came back
    outcome = await fake_launcher.run(request_launch())
    assert outcome.status is LaunchStatus.EXITED
    assert fake.count("create") == 2 and fake.count("start") == 1 and fake.containers == {}


async def test_a_lost_create_then_a_failure_still_leaves_no_container(
    fake_launcher: DockerLauncher, fake: FakeDockerBackend, request_launch: RequestLaunch
) -> None:
    fake.fail("create", AfterEffect(connection_reset()), api_error(400, "bad request"))
    fake.fail("inspect", api_error(400, "refused"))  # so the 409 adoption path cannot rescue it
    with pytest.raises(LaunchFailed):
        await fake_launcher.run(request_launch())
    assert fake.containers == {}  # removed by its launch-unique name


async def test_a_failing_hook_fails_the_launch_and_cleans_up(
    fake_launcher: DockerLauncher, fake: FakeDockerBackend, request_launch: RequestLaunch, store: Store
) -> None:
    def on_phase(phase: LaunchPhase) -> None:
        if phase is LaunchPhase.RUNNING:
            raise RuntimeError("socket server died")

    spec = request_launch()
    with pytest.raises(LaunchFailed, match="socket server died"):
        await fake_launcher.run(spec, on_phase=on_phase)
    assert fake.containers == {}
    assert store.launches.get(spec.launch_id).reason == "hook_failed"


async def test_a_failed_removal_is_a_warning_for_the_reaper(
    fake_launcher: DockerLauncher, fake: FakeDockerBackend, request_launch: RequestLaunch
) -> None:
    fake.fail("remove", *[api_error(500, "device busy")] * 3)
    outcome = await fake_launcher.run(request_launch())
    assert outcome.status is LaunchStatus.EXITED
    assert len(outcome.warnings) == 1 and "the reaper will" in outcome.warnings[0]
    assert len(fake.containers) == 1


async def test_a_missing_runtime_dir_fails_before_any_container(
    fake_launcher: DockerLauncher, fake: FakeDockerBackend, request_launch: RequestLaunch, store: Store
) -> None:
    spec = request_launch(runtime_dir=Path("/nonexistent/rt/abc"))
    with pytest.raises(LaunchFailed, match="runtime directory"):
        await fake_launcher.run(spec)
    assert fake.calls == []
    assert store.launches.get(spec.launch_id).reason == "prepare_failed"


async def test_only_a_requested_launch_matching_its_record_runs(
    fake_launcher: DockerLauncher, fake: FakeDockerBackend, request_launch: RequestLaunch, store: Store
) -> None:
    spec = request_launch()
    await fake_launcher.run(spec)
    other = request_launch()
    before = project_snapshot(store.paths)
    with pytest.raises(Conflict):
        await fake_launcher.run(spec)  # already exited
    for field, value in (("image", "other:1"), ("proposal_id", "P-other"), ("role", "reviewer")):
        mismatched = LaunchSpec(**{**other.__dict__, field: value})
        with pytest.raises(Conflict):
            await fake_launcher.run(mismatched)
    assert project_snapshot(store.paths) == before
    assert fake.count("create") == 1


# -- the client on its own -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("error", "transient"),
    [
        (connection_reset(), True),
        (connection_refused(), True),
        (api_error(500, "x"), True),
        (api_error(502, "x"), True),
        (api_error(503, "x"), True),
        (api_error(404, "x"), False),
        (image_not_found("x"), False),
        (api_error(400, "x"), False),
        (api_error(409, "x"), False),
        (ValueError("x"), False),
    ],
)
def test_transient_classification(error: BaseException, transient: bool) -> None:
    assert is_transient(error) is transient


def test_a_missing_daemon_is_docker_unavailable_with_a_clear_message(tmp_path: Path) -> None:
    socket = tmp_path / "no-docker.sock"
    client = DockerClient(lambda: SdkDockerBackend(f"unix://{socket}"), retry=FAST_RETRY)

    async def ping() -> str:
        try:
            await client.ping()
        except DockerUnavailable as exc:
            return exc.message
        return "no error"

    message = anyio.run(ping)
    gc.collect()  # a socket left open by a failed connect would warn here (warnings are errors)
    assert "cannot reach the Docker engine" in message
    assert "is it running" in message


def test_limits_come_from_the_role_config() -> None:
    role = RoleConfig(memory_limit="256m", cpus=0.5, pids_limit=64, nofile_limit=512)
    limits = LaunchLimits.from_role(role)
    assert limits == LaunchLimits(memory_bytes=256 * 1024**2, cpus=0.5, pids=64, nofile=512)
    assert LaunchLimits.from_role(RoleConfig()).memory_bytes == 512 * 1024**2
