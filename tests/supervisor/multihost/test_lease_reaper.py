"""Leases and the lease reaper without namespaces: which containers a supervisor removes, and a
supervisor that cannot renew its lease. The lease store is written once for both backends, so these
run on the project's SQLite store with the fake engine; the two-host test runs the real thing."""

from __future__ import annotations

from pathlib import Path

import pytest

from store import Store
from store.launches import LEASE_EXPIRED, LaunchStatus, LeaseLost, LeaseStore
from supervisor.docker import reap_expired_owners
from supervisor.docker._client import DockerClient
from supervisor.launch import LABEL_LAUNCH, LABEL_POOL, LABEL_SUPERVISOR, OwnerLease, OwnerLock
from tests.fakes.docker_engine import FakeDockerBackend
from tests.supervisor.conftest import FAST_RETRY

pytestmark = pytest.mark.anyio

OURS = "FAKE:ENGINE"  # what the fake engine reports as its ID


def _expire(store: Store, owner: str) -> None:
    sql = "UPDATE supervisor_leases SET expires_at = expires_at - 3600 WHERE owner = ?"
    store.db.write(lambda conn: conn.execute(sql, (owner,)))


def _launch(store: Store, owner: str) -> str:
    launch = store.launches.request(
        role="memory_oracle", agent_id="a", proposal_id="P-1", image="img", owner=owner
    )
    return launch.id


async def test_an_expired_owner_s_containers_are_removed_only_on_its_own_engine(store: Store) -> None:
    fake = FakeDockerBackend()
    leases = LeaseStore(store.launches)
    for owner, engine in (("1-dead0001", OURS), ("2-dead0002", "ANOTHER:ENGINE"), ("3-alive003", OURS)):
        leases.acquire(owner, host="h", engine=engine, ttl_seconds=15)
    here, there, alive = (_launch(store, owner) for owner in ("1-dead0001", "2-dead0002", "3-alive003"))
    mine = fake.add_container({LABEL_SUPERVISOR: "rt-a", LABEL_LAUNCH: here})
    store.launches.mark_starting(here, mine.id)
    store.launches.mark_starting(there, "f" * 64)  # its container is on the other engine
    # Created, but killed before its id was committed: found by its launch label.
    unrecorded = fake.add_container({LABEL_SUPERVISOR: "rt-a", LABEL_LAUNCH: here})
    # Stand-ins that make a wrong removal visible: same labels as the other engine's container.
    lookalike = fake.add_container({LABEL_SUPERVISOR: "rt-b", LABEL_LAUNCH: there})
    dead_pool = fake.add_container({LABEL_SUPERVISOR: "rt-a", LABEL_POOL: "1-dead0001", LABEL_LAUNCH: "W-1"})
    live_pool = fake.add_container({LABEL_SUPERVISOR: "rt-a", LABEL_POOL: "3-alive003", LABEL_LAUNCH: "W-3"})
    alive_box = fake.add_container({LABEL_SUPERVISOR: "rt-a", LABEL_LAUNCH: alive})
    _expire(store, "1-dead0001")
    _expire(store, "2-dead0002")

    docker = DockerClient(lambda: fake, retry=FAST_RETRY)
    report = await reap_expired_owners(docker, leases, owner="9-me000009", engine=OURS)

    assert set(report.failed_launches) == {here, there}
    for launch_id in (here, there):  # failed whatever the engine: the rows live in the store
        launch = store.launches.get(launch_id)
        assert (launch.status, launch.reason) == (LaunchStatus.FAILED, LEASE_EXPIRED)
    assert store.launches.get(alive).status is LaunchStatus.REQUESTED
    assert set(report.removed_containers) == {mine.id, unrecorded.id, dead_pool.id}
    assert set(fake.containers) >= {lookalike.id, live_pool.id, alive_box.id}
    assert any("ANOTHER:ENGINE" in warning for warning in report.warnings)
    assert [lease.owner for lease in leases.leases()] == ["3-alive003"]
    again = await reap_expired_owners(docker, leases, owner="9-me000009", engine=OURS)
    assert (again.failed_launches, again.removed_containers) == ((), ())


async def test_a_supervisor_whose_engine_is_unknown_removes_no_container(store: Store) -> None:
    fake = FakeDockerBackend()
    leases = LeaseStore(store.launches)
    leases.acquire("1-dead0001", host="h", engine=OURS, ttl_seconds=15)
    launch_id = _launch(store, "1-dead0001")
    box = fake.add_container({LABEL_SUPERVISOR: "rt-a", LABEL_LAUNCH: launch_id})
    store.launches.mark_starting(launch_id, box.id)
    _expire(store, "1-dead0001")
    report = await reap_expired_owners(
        DockerClient(lambda: fake, retry=FAST_RETRY), leases, owner="9-me000009", engine=""
    )
    assert report.failed_launches == (launch_id,)
    assert report.removed_containers == ()
    assert box.id in fake.containers


def test_the_heartbeat_renews_the_lease(store: Store) -> None:
    lease = OwnerLease(LeaseStore(store.launches), ttl_seconds=3, host="host-a")
    lease.acquire()
    try:
        first = lease.leases.leases()[0]
        # Wait on the thing: the row's heartbeat moving on.
        while lease.leases.leases()[0].heartbeat_at == first.heartbeat_at:
            pass
        assert lease.valid
        lease.check()
    finally:
        lease.release()
    assert lease.leases.leases() == []
    assert not lease.valid


def test_a_supervisor_that_lost_its_lease_claims_nothing(store: Store) -> None:
    lease = OwnerLease(LeaseStore(store.launches), ttl_seconds=3, host="host-a")
    lease.check()  # not started yet: nothing held, nothing to refuse (as with a lock)
    lease.acquire()
    try:
        _expire(store, lease.name)  # a reaper may already have failed its launches
        while lease.valid:  # the next heartbeat is refused
            pass
        with pytest.raises(LeaseLost):
            lease.check()
        assert lease.leases.live([lease.name]) == set()
    finally:
        lease.release()


def test_a_host_name_becomes_a_label(store: Store) -> None:
    lease = OwnerLease(LeaseStore(store.launches), ttl_seconds=3, host="-odd host/name")
    assert lease.host == "h-odd-host-name"


def test_a_peer_that_died_on_this_machine_is_reaped_without_waiting_for_its_lease(
    store: Store, tmp_path: Path
) -> None:
    """A supervisor restarted on the same machine (its lock file left unheld) is dead at once; one
    holding its lock, and one whose lock is elsewhere (another host), are alive until their leases
    say otherwise."""
    owners = tmp_path / "owners"
    leases = LeaseStore(store.launches)
    me = OwnerLease(leases, ttl_seconds=15, host="host-a", local=OwnerLock(owners))
    me.acquire()
    peer = OwnerLock(owners)
    peer.acquire()
    try:
        assert (owners / f"{me.name}.lock").exists()
        dead, remote = "12345-dead0001", "67890-0e0e0e0e"
        for name in (dead, peer.name, remote):
            leases.acquire(name, host="host-a", engine=OURS, ttl_seconds=15)
        (owners / f"{dead}.lock").touch()  # what a SIGKILLed supervisor leaves: a lock nobody holds
        orphan, kept = _launch(store, dead), _launch(store, remote)

        assert me.live([dead, peer.name, remote, me.name]) == {peer.name, remote, me.name}
        assert leases.live([dead]) == set()
        assert not (owners / f"{dead}.lock").exists()

        reaped = leases.reap_expired(keep={me.name})
        assert [o.launch.id for o in reaped.orphans] == [orphan]
        assert store.launches.get(orphan).status is LaunchStatus.FAILED
        assert store.launches.get(orphan).reason == "supervisor_restarted"  # as on SQLite
        assert store.launches.get(kept).status is LaunchStatus.REQUESTED
        assert leases.expire([dead, remote]) == {remote}  # a lease already ended is not ended twice
    finally:
        peer.release()
        me.release()
    assert not (owners / f"{me.name}.lock").exists()
    assert leases.live([me.name]) == set()
