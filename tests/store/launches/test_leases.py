"""Supervisor leases (``store.launches.LeaseStore``) on both backends: acquire, renew, expire, reap."""

from __future__ import annotations

from typing import Any

import pytest

from store import Conflict, InvalidArgument, Store, list_events
from store.launches import LEASE_EXPIRED, Launch, LaunchStatus, LeaseLost, LeaseStore, Reaped
from tests.store.work_helpers import DIFF, new_task


def _leases(store: Store) -> LeaseStore:
    return LeaseStore(store.launches)


def _launch(store: Store, owner: str | None, proposal_id: str = "P-1") -> Launch:
    return store.launches.request(
        role="memory_oracle",
        agent_id="memory-oracle-1",
        proposal_id=proposal_id,
        image="roundtable-role:0.1.0",
        owner=owner,
    )


def _expire(store: Store, owner: str) -> None:
    """Move ``owner``'s expiry into the past, as the database clock passing it would."""
    store.db.write(
        lambda conn: conn.execute(
            "UPDATE supervisor_leases SET expires_at = expires_at - 3600 WHERE owner = ?", (owner,)
        )
    )


def _grant(store: Store, launch_id: str, proposal_id: str) -> str:
    issued = store.grants.mint_grant(
        proposal_id=proposal_id,
        role="memory_oracle",
        agent_id="memory-oracle-1",
        tools=frozenset({"memory.query"}),
        ttl_seconds=600,
        actor="op",
        launch_id=launch_id,
    )
    return issued.record.id


def test_a_lease_is_acquired_renewed_and_released(store: Store) -> None:
    leases = _leases(store)
    lease = leases.acquire("1-aaaaaaaa", host="host-a", engine="ENGINE-A", ttl_seconds=15)
    assert (lease.owner, lease.host, lease.engine, lease.ttl_seconds) == (
        "1-aaaaaaaa",
        "host-a",
        "ENGINE-A",
        15,
    )
    assert lease.expires_at == pytest.approx(lease.heartbeat_at + 15)
    assert leases.live(["1-aaaaaaaa", "2-bbbbbbbb"]) == {"1-aaaaaaaa"}
    renewed = leases.renew("1-aaaaaaaa")
    assert renewed.heartbeat_at >= lease.heartbeat_at
    assert renewed.expires_at == pytest.approx(renewed.heartbeat_at + 15)
    with pytest.raises(Conflict):
        leases.acquire("1-aaaaaaaa", host="host-b", engine="", ttl_seconds=15)
    assert leases.release("1-aaaaaaaa") is True
    assert leases.release("1-aaaaaaaa") is False
    assert leases.live(["1-aaaaaaaa"]) == set()


@pytest.mark.parametrize("ttl", [0, -1, 3601, True, "15"])
def test_a_bad_ttl_is_refused_and_creates_nothing(store: Store, ttl: Any) -> None:
    leases = _leases(store)
    with pytest.raises(InvalidArgument):
        leases.acquire("1-aaaaaaaa", host="h", engine="", ttl_seconds=ttl)
    assert leases.leases() == []


def test_an_expired_lease_is_never_renewed(store: Store) -> None:
    leases = _leases(store)
    leases.acquire("1-aaaaaaaa", host="h", engine="", ttl_seconds=15)
    _expire(store, "1-aaaaaaaa")
    assert leases.live(["1-aaaaaaaa"]) == set()
    with pytest.raises(LeaseLost) as raised:
        leases.renew("1-aaaaaaaa")
    assert raised.value.code == "conflict"
    with pytest.raises(LeaseLost):
        leases.renew("9-ffffffff")  # never held


def test_a_short_lease_expires_on_the_database_clock(store: Store) -> None:
    leases = _leases(store)
    leases.acquire("1-aaaaaaaa", host="h", engine="", ttl_seconds=0.2)
    # Wait on the thing itself: the database saying the lease is no longer live.
    while leases.live(["1-aaaaaaaa"]):
        pass
    with pytest.raises(LeaseLost):
        leases.renew("1-aaaaaaaa")


def test_reaping_fails_only_the_launches_of_expired_owners_and_revokes_their_grants(store: Store) -> None:
    leases = _leases(store)
    proposal, _ = store.proposals.create(
        task_id=new_task(store).id, agent_id="implementer-1", title="p", patch=DIFF, actor="op"
    )
    leases.acquire("1-aaaaaaaa", host="a", engine="ENGINE-A", ttl_seconds=15)
    leases.acquire("2-bbbbbbbb", host="b", engine="ENGINE-B", ttl_seconds=15)
    dead = _launch(store, "1-aaaaaaaa")
    store.launches.mark_starting(dead.id, "c" * 64)
    alive = _launch(store, "2-bbbbbbbb")
    unowned = _launch(store, None)
    finished = _launch(store, "1-aaaaaaaa")
    store.launches.finish(finished.id, LaunchStatus.CANCELLED)
    dead_grant, alive_grant = _grant(store, dead.id, proposal["id"]), _grant(store, alive.id, proposal["id"])
    first = leases.reap_expired()  # nothing expired yet: only the launch nobody owns
    assert [(o.launch.id, o.engine) for o in first.orphans] == [(unowned.id, "")]
    assert first.expired == ()
    assert store.launches.get(unowned.id).status is LaunchStatus.FAILED
    assert store.launches.get(dead.id).status is LaunchStatus.STARTING

    _expire(store, "1-aaaaaaaa")
    reaped = leases.reap_expired()
    orphans = [(o.launch.id, o.engine, o.revoked_grants) for o in reaped.orphans]
    assert orphans == [(dead.id, "ENGINE-A", (dead_grant,))]
    assert [(lease.owner, lease.engine) for lease in reaped.expired] == [("1-aaaaaaaa", "ENGINE-A")]
    failed = store.launches.get(dead.id)
    assert (failed.status, failed.reason, failed.container_id) == (
        LaunchStatus.FAILED,
        LEASE_EXPIRED,
        "c" * 64,
    )
    assert store.grants.get_grant(dead_grant).revoked_at is not None
    assert store.grants.get_grant(alive_grant).revoked_at is None
    assert store.launches.get(alive.id).status is LaunchStatus.REQUESTED
    assert [lease.owner for lease in leases.leases()] == ["2-bbbbbbbb"]  # the expired row is gone
    assert leases.reap_expired().orphans == ()  # a second reaper finds nothing left: nothing twice
    events = store.db.read(lambda conn: list_events(conn, types=("role.failed",), limit=100))
    assert [e.payload["launch_id"] for e in events].count(dead.id) == 1


def test_a_kept_owner_is_never_reaped(store: Store) -> None:
    leases = _leases(store)
    leases.acquire("1-aaaaaaaa", host="a", engine="", ttl_seconds=15)
    mine = _launch(store, "1-aaaaaaaa")
    _expire(store, "1-aaaaaaaa")
    assert leases.reap_expired(keep={"1-aaaaaaaa"}) == Reaped((), ())
    assert leases.live(["1-aaaaaaaa"]) == set()  # expired, but kept: its row stays
    assert len(leases.leases()) == 1
    assert store.launches.get(mine.id).status is LaunchStatus.REQUESTED
