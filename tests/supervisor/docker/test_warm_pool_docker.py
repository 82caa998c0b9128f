"""The warm pool on the real engine: what a pooled container sees, that it is used once, that it
counts against ``max_concurrent_launches``, and that it never outlives its supervisor."""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from capabilities.services import Services
from store import ProjectPaths, Store, open_store
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
    """The project's pooled containers (claimed or not)."""
    label = f"{LABEL_SUPERVISOR}={supervisor_id_for(store.paths.root)}"
    return [
        c for c in docker_sdk.containers.list(all=True, filters={"label": label}) if LABEL_POOL in c.labels
    ]


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
        # The container side: the same two FIFOs, and no grant exists anywhere yet.
        listing = container.exec_run(["ls", "-1A", "/run/roundtable"], user="10001:10001")
        assert listing.output.decode().split() == ["go", "ready"]
        assert (
            pool_store.db.read(lambda c: c.execute("SELECT COUNT(*) FROM capability_grants").fetchone()[0])
            == 0
        )


async def test_each_pooled_container_serves_one_launch_and_sees_no_other(
    pool_store: Store, docker_sdk: Any
) -> None:
    first, second = await proposals(pool_store, 2)
    seen: dict[str, dict[str, str]] = {}
    async with Supervisor(pool_store) as supervisor, supervisor.warm(2) as pool:
        assert pool is not None
        with anyio.fail_after(120):
            assert await pool.until_ready() == 2
        others = list(pool.idle)

        def watch(phase: str, details: dict[str, Any]) -> None:
            if phase == "running":  # the launch runs: the other pooled container still sees nothing
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
