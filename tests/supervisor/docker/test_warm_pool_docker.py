"""The warm pool on the real engine: what a pooled container sees, that it is used once, that it
counts against ``max_concurrent_launches``, and that it never outlives its supervisor."""

from __future__ import annotations

import json
import os
import re
import signal
import stat
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from capabilities.services import Services
from store import ProjectPaths, Store, open_store
from store.errors import InternalError
from store.launches import LaunchStatus
from supervisor._supervisor import Supervisor
from supervisor.cli._demo import DEMO_PATCH
from supervisor.cli._project import operator_call
from supervisor.docker import WarmPool
from supervisor.launch import LABEL_POOL, LABEL_SUPERVISOR, supervisor_id_for
from tests.supervisor.docker._overlay import overlay_image

pytestmark = [pytest.mark.anyio, pytest.mark.docker]


@pytest.fixture(scope="session")
def pool_image(docker_sdk: Any, role_image_tag: str) -> str:
    """The role image with this checkout's runner (its claim wait) in it."""
    return overlay_image(docker_sdk, role_image_tag)


def configure(paths: ProjectPaths, image: str, **supervisor: int) -> None:
    """Point the oracle at ``image`` and set ``[supervisor]`` keys in ``config.toml``."""
    text = paths.config_file.read_text()
    text = re.sub(r'(?m)^image = "roundtable-role:[^"]*"', f'image = "{image}"', text, count=1)
    for key, value in supervisor.items():
        text = re.sub(rf"(?m)^{key} = \d+", f"{key} = {value}", text)
    paths.config_file.write_text(text)


@pytest.fixture
def pool_store(project: ProjectPaths, pool_image: str) -> Iterator[Store]:
    """The project's store, its oracle on the pool image (warm_pool 2, 4 launches at once)."""
    configure(project, pool_image)
    opened = open_store(project)
    try:
        yield opened
    finally:
        opened.close()


@pytest.fixture(autouse=True)
def _no_container_of_this_project_survives(docker_sdk: Any, project: ProjectPaths) -> Iterator[None]:
    yield
    label = f"{LABEL_SUPERVISOR}={supervisor_id_for(project.root)}"
    leftovers = docker_sdk.containers.list(all=True, filters={"label": label})
    for container in leftovers:
        container.remove(force=True)
    assert not leftovers, f"containers survived the test: {[c.name for c in leftovers]}"


async def proposals(store: Store, count: int) -> list[str]:
    """``count`` open proposals with a patch (the demo's raw-SQL one)."""
    services = Services(store=store)
    task = await operator_call(services, "task.create", {"title": "Look users up by name"})
    made = []
    for number in range(count):
        created = await operator_call(
            services,
            "proposal.create",
            {
                "task_id": task["task"]["id"],
                "agent_id": "implementer-1",
                "title": f"p{number}",
                "patch": DEMO_PATCH,
            },
        )
        made.append(str(created["proposal"]["id"]))
    return made


def pooled(docker_sdk: Any, store: Store) -> list[Any]:
    """The project's pooled containers (claimed or not; one removed while listed is not one)."""
    label = f"{LABEL_SUPERVISOR}={supervisor_id_for(store.paths.root)}"
    listed = docker_sdk.containers.list(all=True, filters={"label": label}, ignore_removed=True)
    return [c for c in listed if LABEL_POOL in c.labels]


def rows(store: Store, sql: str) -> list[Any]:
    """The rows of one query."""
    return store.db.read(lambda conn: conn.execute(sql).fetchall())


def runtime_listing(path: Path) -> dict[str, str]:
    """Each entry of a runtime directory and its kind."""
    kinds = {stat.S_IFIFO: "fifo", stat.S_IFSOCK: "socket", stat.S_IFREG: "file"}
    return {entry.name: kinds.get(stat.S_IFMT(os.lstat(entry).st_mode), "other") for entry in path.iterdir()}


async def test_a_pooled_container_sees_nothing_of_a_launch_before_its_claim(
    pool_store: Store, docker_sdk: Any
) -> None:
    await proposals(pool_store, 1)
    async with Supervisor(pool_store) as supervisor, supervisor.warm(1) as pool:
        assert isinstance(pool, WarmPool)
        with anyio.fail_after(120):
            assert await pool.until_ready() == 1
        (slot,) = pool.idle
        # The host side: two FIFOs, no token, no socket, no file of any proposal.
        assert runtime_listing(slot.rundir.path) == {"go": "fifo", "ready": "fifo"}
        (container,) = pooled(docker_sdk, pool_store)
        attrs = container.attrs
        # One mount, the runtime directory, read-only; nothing in the environment or the labels
        # that names a launch, a grant or a proposal.
        mounts = attrs["Mounts"]
        assert [(m["Source"], m["Destination"], m["RW"]) for m in mounts] == [
            (str(slot.rundir.path), "/run/roundtable", False)
        ]
        env = dict(item.split("=", 1) for item in attrs["Config"]["Env"])
        assert not [name for name in env if re.search(r"(?i)token|proposal|grant|launch", name)]
        assert container.labels["roundtable.proposal"] == "unclaimed"
        assert container.labels["roundtable.launch"] == slot.slot_id
        assert attrs["HostConfig"]["ReadonlyRootfs"] is True
        assert attrs["HostConfig"]["NetworkMode"] == "none"
        assert attrs["HostConfig"]["CapDrop"] == ["ALL"]
        assert attrs["HostConfig"]["CpuShares"] == 2  # waiting at the lowest weight
        # The container side: the same two FIFOs, and no grant exists anywhere yet.
        listing = container.exec_run(["ls", "-1A", "/run/roundtable"], user="10001:10001")
        assert listing.output.decode().split() == ["go", "ready"]
        assert (
            pool_store.db.read(lambda c: c.execute("SELECT COUNT(*) FROM capability_grants").fetchone()[0])
            == 0
        )


async def test_a_pooled_container_that_dies_while_it_waits_is_replaced_not_lent(
    pool_store: Store, docker_sdk: Any
) -> None:
    (proposal,) = await proposals(pool_store, 1)
    async with Supervisor(pool_store) as supervisor, supervisor.warm(1) as pool:
        assert pool is not None
        with anyio.fail_after(120):
            assert await pool.until_ready() == 1
        (dead,) = pool.idle
        await anyio.to_thread.run_sync(docker_sdk.containers.get(dead.container_id).kill)
        with anyio.fail_after(120):
            await dead.gone.wait()  # noticed by the pool's wait on it, not at a claim
            while not (fresh := [s for s in pool.idle if s is not dead and s.ready.is_set()]):
                await anyio.lowlevel.checkpoint()  # let the pool start the replacement
                await pool.until_ready()
        result = await supervisor.launch_role("memory_oracle", proposal)
        assert result.launch.status == "exited"
        assert result.launch.container_id == fresh[0].container_id != dead.container_id
    assert pooled(docker_sdk, pool_store) == []


async def test_each_pooled_container_serves_one_launch_and_sees_no_other(
    pool_store: Store, docker_sdk: Any
) -> None:
    first, second = await proposals(pool_store, 2)
    seen: dict[str, dict[str, str]] = {}
    weights: list[int] = []
    async with Supervisor(pool_store) as supervisor, supervisor.warm(2) as pool:
        assert pool is not None
        with anyio.fail_after(120):
            assert await pool.until_ready() == 2
        others = list(pool.idle)

        def watch(phase: str, details: dict[str, Any]) -> None:
            if phase == "running":  # the launch runs: the other pooled container still sees nothing
                weights.append(docker_sdk.containers.get(claimed_id()).attrs["HostConfig"]["CpuShares"])
                for slot in others:
                    if slot.container_id != claimed_id():
                        seen[slot.slot_id] = runtime_listing(slot.rundir.path)

        def claimed_id() -> str | None:
            rows = pool_store.db.read(
                lambda c: c.execute("SELECT container_id FROM role_launches").fetchall()
            )
            return rows[-1][0] if rows else None

        with anyio.fail_after(120):
            one = await supervisor.launch_role("memory_oracle", first, on_phase=watch)
            two = await supervisor.launch_role("memory_oracle", second)
    assert one.launch.status is LaunchStatus.EXITED, one.launch.to_dict(with_log=True)
    assert two.launch.status is LaunchStatus.EXITED, two.launch.to_dict(with_log=True)
    pooled_ids = {slot.container_id for slot in others}
    # Both launches ran in pooled containers, each in its own: a container is never used twice.
    assert one.launch.container_id in pooled_ids and two.launch.container_id in pooled_ids
    assert one.launch.container_id != two.launch.container_id
    assert seen and all(listing == {"go": "fifo", "ready": "fifo"} for listing in seen.values())
    assert weights == [1024]  # the claim gave it the engine's default weight back
    # The grants were minted at the claim, long after the containers had started.
    grants = pool_store.db.read(
        lambda c: c.execute("SELECT launch_id, revoked_at FROM capability_grants").fetchall()
    )
    assert len(grants) == 2 and all(row["revoked_at"] for row in grants)
    assert pooled(docker_sdk, pool_store) == []  # removed on the way out, claimed or not


async def test_pooled_containers_count_against_max_concurrent_launches(
    project: ProjectPaths, pool_image: str, docker_sdk: Any
) -> None:
    configure(project, pool_image, max_concurrent_launches=1)
    store = open_store(project)
    try:
        (proposal,) = await proposals(store, 1)
        async with Supervisor(store) as supervisor, supervisor.warm(3) as pool:
            assert pool is not None
            with anyio.fail_after(120):
                assert await pool.until_ready() == 1  # one slot in all: one pooled container
            assert len(pooled(docker_sdk, store)) == 1
            # A launch the pool cannot serve (another provider: another command) takes the slot
            # from the idle pooled container instead of waiting for ever.
            with anyio.fail_after(120):
                result = await supervisor.launch_role("memory_oracle", proposal, provider="lexical")
            assert result.launch.status is LaunchStatus.EXITED, result.launch.to_dict(with_log=True)
            assert result.launch.container_id not in {slot.container_id for slot in pool.idle}
    finally:
        store.close()
    assert pooled(docker_sdk, store) == []


async def test_evicting_a_container_while_it_starts_leaves_the_pool_and_its_launches_running(
    pool_store: Store, docker_sdk: Any
) -> None:
    (proposal,) = await proposals(pool_store, 1)
    since = time.time()
    async with Supervisor(pool_store) as supervisor, supervisor.warm(2) as pool:
        assert pool is not None
        # Started but not ready yet (its runner is still importing): the fill is waiting on its FIFO.
        await anyio.to_thread.run_sync(wait_for_pooled_start, docker_sdk, pool_store.paths.root, since)
        assert pool.evict_idle()  # a starting one first: its fill is cancelled, and removes it
        with anyio.fail_after(180):
            result = await supervisor.launch_role("memory_oracle", proposal)
        assert result.launch.status is LaunchStatus.EXITED, result.launch.to_dict(with_log=True)
    assert pooled(docker_sdk, pool_store) == []


# -- the hand-off to a running `roundtable serve`, with the real command in subprocesses ----------------


_NO_SUCH_PROPOSAL = "P-20000101T000000000000Z-000000000000"


def cli(argv: list[str], root: Path, *args: str) -> tuple[int, dict[str, Any], list[dict[str, Any]]]:
    """Run ``roundtable ARGS --root ROOT --json``: exit status, answer, progress lines."""
    done = subprocess.run(
        [*argv, *args, "--root", str(root), "--json"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    lines = [json.loads(line) for line in done.stderr.splitlines() if line.startswith("{")]
    progress = [line for line in lines if "phase" in line]  # the rest are log lines
    return done.returncode, json.loads(done.stdout), progress


@contextmanager
def serving(argv: list[str], root: Path) -> Iterator[subprocess.Popen[str]]:
    """A ``roundtable serve`` on ``root``, ready (it has said where it listens); stopped after."""
    serve = subprocess.Popen(
        [*argv, "serve", "--root", str(root), "--port", "0"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert serve.stderr is not None
        for line in serve.stderr:
            if line.startswith("serving "):  # the banner's first line
                break
        else:
            pytest.fail(f"roundtable serve ended before it was ready (status {serve.wait()})")
        yield serve
    finally:
        if serve.poll() is None:
            serve.terminate()
        serve.wait(timeout=120)
        if serve.stderr is not None:
            serve.stderr.close()


def wait_for_pooled_start(docker_sdk: Any, root: Path, since: float) -> None:
    """Block until a pooled container of the project's supervisor has started (engine events)."""
    label = f"{LABEL_SUPERVISOR}={supervisor_id_for(root)}"
    events = docker_sdk.events(
        decode=True,
        since=int(since),
        until=int(time.time()) + 120,
        filters={"label": label, "event": "start"},
    )
    for event in events:
        if LABEL_POOL in event.get("Actor", {}).get("Attributes", {}):
            events.close()
            return
    pytest.fail("no pooled container started within 120 s")


async def test_launches_are_handed_to_a_running_serve_and_answered_alike(
    pool_store: Store, docker_sdk: Any, roundtable_argv: list[str]
) -> None:
    root = pool_store.paths.root
    local, handed, review, after_crash = await proposals(pool_store, 4)
    status, answer, local_progress = cli(roundtable_argv, root, "oracle", "launch", local, "--wait")
    assert status == 0 and "handed_off" not in [line["phase"] for line in local_progress]
    missing_local = cli(roundtable_argv, root, "oracle", "launch", _NO_SUCH_PROPOSAL, "--wait")
    started = time.time()
    with serving(roundtable_argv, root) as serve:
        status, handed_answer, progress = cli(roundtable_argv, root, "oracle", "launch", handed, "--wait")
        assert status == 0, handed_answer
        assert progress[0] == {"phase": "handed_off", "serve_pid": serve.pid}
        assert [p["phase"] for p in progress[1:]] == [p["phase"] for p in local_progress]
        assert set(handed_answer) == set(answer) and set(handed_answer["launch"]) == set(answer["launch"])
        assert handed_answer["launch"]["status"] == "exited"
        owner = rows(pool_store, f"SELECT owner FROM role_launches WHERE proposal_id = '{handed}'")[0][0]
        assert owner.startswith(f"{serve.pid}-")  # the serve ran it
        # The same structured error, and exit status, as in-process.
        missing = cli(roundtable_argv, root, "oracle", "launch", _NO_SUCH_PROPOSAL, "--wait")
        assert (missing[0], missing[1]) == (missing_local[0], missing_local[1]) and missing[0] == 1
        status, round_answer, progress = cli(roundtable_argv, root, "review", "run", review, "--wait")
        assert status == 0 and progress[0]["phase"] == "handed_off"
        assert [launch["launch"]["status"] for launch in round_answer["review"]["launches"]] == ["exited"]
        await anyio.to_thread.run_sync(wait_for_pooled_start, docker_sdk, root, started)
        os.killpg(serve.pid, signal.SIGKILL)  # it dies holding pooled containers
        serve.wait()
    assert pooled(docker_sdk, pool_store), "the killed serve left no pooled container to reap"
    assert (pool_store.paths.state_dir / "serve.json").exists()
    # Its file is stale now: the command runs the launch itself, and its supervisor's start reaps
    # what the dead serve left.
    status, answer, progress = cli(roundtable_argv, root, "oracle", "launch", after_crash, "--wait")
    assert status == 0 and "handed_off" not in [line["phase"] for line in progress]
    assert not (pool_store.paths.state_dir / "serve.json").exists()
    assert pooled(docker_sdk, pool_store) == []


async def test_a_stopping_serve_removes_its_pool(
    pool_store: Store, docker_sdk: Any, roundtable_argv: list[str]
) -> None:
    started = time.time()
    with serving(roundtable_argv, pool_store.paths.root) as serve:
        await anyio.to_thread.run_sync(wait_for_pooled_start, docker_sdk, pool_store.paths.root, started)
        assert pooled(docker_sdk, pool_store)
        serve.terminate()
        assert serve.wait(timeout=120) == 0
    assert pooled(docker_sdk, pool_store) == []
    assert not (pool_store.paths.state_dir / "serve.json").exists()


async def test_a_claim_that_fails_before_its_go_line_leaves_no_container(
    pool_store: Store, docker_sdk: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    (proposal,) = await proposals(pool_store, 1)

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise InternalError("injected: minting the grant failed")

    async with Supervisor(pool_store) as supervisor, supervisor.warm(1) as pool:
        assert pool is not None
        with anyio.fail_after(120):
            assert await pool.until_ready() == 1
        (claimed,) = pool.idle
        monkeypatch.setattr("capabilities.auth.issue_capability", refuse)  # imported per launch
        with pytest.raises(InternalError, match="injected"):
            await supervisor.launch_role("memory_oracle", proposal)
        assert claimed not in pool.idle  # never handed out again
    # Never let go, so removed (not left running for the pool's life, nor after it).
    assert pooled(docker_sdk, pool_store) == []


async def test_a_one_shot_pools_container_runs_at_the_default_weight(
    pool_store: Store, docker_sdk: Any
) -> None:
    """A cold command's pooled container is its own launch's, about to be claimed: at the lowest
    weight it would wait for the command's imports to leave it a core (a refilling pool's waits
    there, see the claim test above), so it starts at the default weight and its claim makes no
    engine call to change it."""
    (proposal,) = await proposals(pool_store, 1)
    async with Supervisor(pool_store) as supervisor, supervisor.warm(1, one_shot=True) as pool:
        assert pool is not None
        with anyio.fail_after(120):
            assert await pool.until_ready() == 1
        (container,) = pooled(docker_sdk, pool_store)
        assert container.attrs["HostConfig"]["CpuShares"] == 0  # the engine's default
        (slot,) = pool.idle
        calls: list[str] = []
        update = slot.docker.update_cpu_shares if slot.docker is not None else None
        assert update is not None

        async def recorded(container_id: str, shares: int) -> None:
            calls.append(container_id)
            await update(container_id, shares)

        slot.docker.update_cpu_shares = recorded  # type: ignore[method-assign,union-attr]
        result = await supervisor.launch_role("memory_oracle", proposal)
    assert result.launch.status is LaunchStatus.EXITED, result.launch.to_dict(with_log=True)
    assert result.launch.container_id == container.id
    assert calls == []


# -- what a burst of launches leaves to the engine: one refill at a time, removals after ----------------


class CountedStarts:
    """Wraps a pool's container start-up and keeps the most starts that were under way at once;
    with ``gated``, each start waits for :attr:`gate` before it begins (the engine's pace, held)."""

    def __init__(self, pool: WarmPool, *, gated: bool = False) -> None:
        self.pool, self.now, self.most = pool, 0, 0
        self.gate, self.counted = anyio.Event(), anyio.Event()
        if not gated:
            self.gate.set()
        self._start = pool._starter.start
        pool._starter.start = self._counted  # type: ignore[method-assign]

    async def _counted(self, slot: Any) -> bool:
        self.now += 1
        self.most = max(self.most, self.now)
        self.counted.set()
        self.counted = anyio.Event()
        try:
            await self.gate.wait()
            return await self._start(slot)
        finally:
            self.now -= 1

    async def until_under_way(self, count: int) -> None:
        """Wait until ``count`` starts are under way at once."""
        while self.now < count:
            await self.counted.wait()


class HeldLaunches:
    """An ``on_phase`` reporter that holds each launch once its container runs, until let go."""

    def __init__(self, count: int) -> None:
        self.count, self.running = count, 0
        self.all_running, self.go = anyio.Event(), anyio.Event()

    async def __call__(self, phase: str, details: dict[str, Any]) -> None:
        if phase == "running":
            self.running += 1
            if self.running == self.count:
                self.all_running.set()
            await self.go.wait()


async def test_while_a_claimed_launch_runs_the_pool_refills_one_container_at_a_time(
    pool_store: Store, docker_sdk: Any
) -> None:
    ids = await proposals(pool_store, 2)
    async with Supervisor(pool_store) as supervisor, supervisor.warm(2) as pool:
        assert pool is not None
        with anyio.fail_after(120):
            assert await pool.until_ready() == 2
        starts, held = CountedStarts(pool), HeldLaunches(2)
        results = []
        async with anyio.create_task_group() as launches:

            async def launch(proposal_id: str) -> None:
                results.append(await supervisor.launch_role("memory_oracle", proposal_id, on_phase=held))

            for proposal_id in ids:
                launches.start_soon(launch, proposal_id)
            with anyio.fail_after(180):
                await held.all_running.wait()
                # Both claimed launches still run; two launch slots are free (4 in all): the pool
                # refills both, never both at once, and does not wait for the launches to end.
                assert await pool.until_ready() == 2
            assert (starts.most, len(pool.idle)) == (1, 2)
            held.go.set()
        assert [r.launch.status for r in results] == [LaunchStatus.EXITED] * 2
        # With nothing claimed, the pool refills at once: two evicted, two started together.
        assert pool.evict_idle() and pool.evict_idle()
        with anyio.fail_after(120):
            assert await pool.until_ready() == 2
        assert starts.most == 2
    assert pooled(docker_sdk, pool_store) == []


async def test_an_ended_launchs_container_is_removed_once_no_other_launch_runs(
    pool_store: Store, docker_sdk: Any
) -> None:
    first, second = await proposals(pool_store, 2)
    async with Supervisor(pool_store) as supervisor, supervisor.warm(2) as pool:
        assert pool is not None
        with anyio.fail_after(120):
            assert await pool.until_ready() == 2
        held = HeldLaunches(1)
        async with anyio.create_task_group() as launches:
            ended: list[Any] = []

            async def launch_held() -> None:
                ended.append(await supervisor.launch_role("memory_oracle", second, on_phase=held))

            launches.start_soon(launch_held)
            with anyio.fail_after(180):
                await held.all_running.wait()
                done = await supervisor.launch_role("memory_oracle", first)
            assert done.launch.status is LaunchStatus.EXITED
            # Its container has stopped and its end is recorded; the other launch still runs, so
            # its removal waits (the engine's CPU is the running launch's).
            container = await anyio.to_thread.run_sync(docker_sdk.containers.get, done.launch.container_id)
            assert container.status == "exited"
            held.go.set()
        assert ended[0].launch.status is LaunchStatus.EXITED
        # No launch runs now: both are removed while the service goes on (the engine says when).
        with anyio.fail_after(60):
            for launch in (done, ended[0]):
                await anyio.to_thread.run_sync(wait_removed, docker_sdk, str(launch.launch.container_id))
    assert pooled(docker_sdk, pool_store) == []


def wait_removed(docker_sdk: Any, container_id: str) -> None:
    """Return once the engine has removed ``container_id`` (at once if it is gone already)."""
    import docker.errors

    try:
        docker_sdk.api.wait(container_id, condition="removed", timeout=60)
    except docker.errors.NotFound:
        return


async def test_a_launch_that_waits_for_a_starting_container_lets_the_next_refill_start(
    pool_store: Store, docker_sdk: Any
) -> None:
    ids = await proposals(pool_store, 3)
    async with Supervisor(pool_store) as supervisor, supervisor.warm(2) as pool:
        assert pool is not None
        with anyio.fail_after(120):
            assert await pool.until_ready() == 2
        starts, held = CountedStarts(pool, gated=True), HeldLaunches(2)
        results = []
        async with anyio.create_task_group() as launches:

            async def launch(proposal_id: str, on_phase: Any = None) -> None:
                results.append(await supervisor.launch_role("memory_oracle", proposal_id, on_phase=on_phase))

            for proposal_id in ids[:2]:
                launches.start_soon(launch, proposal_id, held)
            with anyio.fail_after(60):  # the starts are counted before the engine is asked
                await held.all_running.wait()
                await starts.until_under_way(1)
                for _ in range(20):
                    await anyio.lowlevel.checkpoint()
                # Both claims found a ready container, and nobody called until_ready since: the
                # pool's own loop started the refills, one at a time.
                assert starts.now == 1
                # A third launch finds none ready: it claims the one starting and waits for it, so
                # the pool is short, and the other refill starts at once beside it.
                launches.start_soon(launch, ids[2])
                await starts.until_under_way(2)
            starts.gate.set()
            held.go.set()
        assert [r.launch.status for r in results] == [LaunchStatus.EXITED] * 3
    assert pooled(docker_sdk, pool_store) == []
