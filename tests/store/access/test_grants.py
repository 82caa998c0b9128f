"""Capability grants and operator tokens: minting, hashing, verification, revocation, events."""

from __future__ import annotations

import hashlib
import sqlite3
from datetime import timedelta
from typing import Any

import pytest

from store import Store
from store._ids import utc_now
from store.access._grants import (
    MAX_TTL_SECONDS,
    GrantRecord,
    TokenRecord,
    hash_token,
    revoke_for_launch_in,
    revoke_for_proposal_in,
)
from store.errors import Conflict, InvalidArgument, NotFound, Unauthenticated
from store.events._log import list_events
from tests.helpers import insert_proposal

ORACLE_TOOLS = frozenset({"task.history", "patch.inspect", "memory.query"})


def mint(store: Store, proposal_id: str, *, ttl: int = 600, launch_id: str | None = None) -> tuple[str, str]:
    issued = store.grants.mint_grant(
        proposal_id=proposal_id,
        role="memory_oracle",
        agent_id="memory-oracle-1",
        tools=ORACLE_TOOLS,
        ttl_seconds=ttl,
        actor="operator",
        launch_id=launch_id,
    )
    return issued.record.id, issued.token


def test_grant_takes_task_and_scopes_from_the_proposal(store: Store) -> None:
    task_id, proposal_id = insert_proposal(store)
    grant_id, token = mint(store, proposal_id)
    grant = store.grants.authenticate(token)
    assert isinstance(grant, GrantRecord)
    assert grant.id == grant_id
    assert grant.proposal_id == proposal_id
    assert grant.task_id == task_id
    assert grant.scopes == frozenset({task_id, "project"})
    assert grant.tools == ORACLE_TOOLS
    assert grant.role == "memory_oracle"
    assert grant.agent_id == "memory-oracle-1"


def test_only_the_hash_is_stored_and_the_token_is_nowhere(store: Store) -> None:
    _, proposal_id = insert_proposal(store)
    issued = store.grants.mint_grant(
        proposal_id=proposal_id,
        role="memory_oracle",
        agent_id="memory-oracle-1",
        tools=ORACLE_TOOLS,
        ttl_seconds=60,
        actor="operator",
    )
    token = issued.token
    assert token not in repr(issued)
    assert len(token) >= 43  # 32 random bytes, URL-safe base64
    stored = store.db.read(
        lambda conn: conn.execute(
            "SELECT token_sha256 FROM capability_grants WHERE id = ?", (issued.record.id,)
        ).fetchone()[0]
    )
    assert stored == hashlib.sha256(token.encode()).hexdigest() == hash_token(token)
    store.grants.revoke(issued.record.id, actor="operator")
    store.db.connection().execute("PRAGMA wal_checkpoint(PASSIVE)")
    dump = "\n".join(store.db.connection().iterdump())
    assert token not in dump
    events = store.db.read(lambda conn: list_events(conn, limit=1000))
    assert all(token not in repr(event.to_dict()) for event in events)
    for path in store.paths.state_dir.iterdir():
        if path.is_file():
            assert token.encode() not in path.read_bytes()


def test_granted_and_revoked_events_are_written_with_the_change(store: Store) -> None:
    task_id, proposal_id = insert_proposal(store)
    grant_id, _ = mint(store, proposal_id, launch_id="L-1")
    granted = store.db.read(lambda conn: list_events(conn, types=("capability.granted",)))
    assert [event.payload["grant_id"] for event in granted] == [grant_id]
    assert granted[0].proposal_id == proposal_id
    assert granted[0].task_id == task_id
    assert granted[0].payload["scopes"] == sorted({task_id, "project"})
    assert granted[0].payload["launch_id"] == "L-1"

    grant, changed = store.grants.revoke(grant_id, actor="operator", reason="done")
    assert changed and grant.revoked_at is not None and grant.revoked_reason == "done"
    again, changed_again = store.grants.revoke(grant_id, actor="operator")
    assert not changed_again and again.revoked_at == grant.revoked_at
    revoked = store.db.read(lambda conn: list_events(conn, types=("capability.revoked",)))
    assert [event.payload["grant_id"] for event in revoked] == [grant_id]


def test_revoked_expired_unknown_and_malformed_tokens_are_unauthenticated(store: Store) -> None:
    _, proposal_id = insert_proposal(store)
    grant_id, token = mint(store, proposal_id)
    store.grants.revoke(grant_id, actor="operator")
    with pytest.raises(Unauthenticated, match="revoked") as revoked:
        store.grants.authenticate(token)
    assert token not in str(revoked.value)

    _, short = mint(store, proposal_id, ttl=1)
    store.grants.authenticate(short)
    # Move the store's clock past the expiry instead of sleeping.
    store.grants.clock = lambda: utc_now() + timedelta(seconds=2)
    with pytest.raises(Unauthenticated, match="expired"):
        store.grants.authenticate(short)

    with pytest.raises(Unauthenticated, match="not known"):
        store.grants.authenticate("A" * 43)
    for bad in ("", "short", "has space in it and is long enough to pass length", "ä" * 43, "x" * 500):
        with pytest.raises(Unauthenticated, match="malformed"):
            store.grants.authenticate(bad)


def test_a_grant_binding_is_immutable_in_the_database(store: Store) -> None:
    _, proposal_id = insert_proposal(store)
    grant_id, _ = mint(store, proposal_id)
    with pytest.raises(sqlite3.IntegrityError, match="immutable"):
        store.db.connection().execute(
            "UPDATE capability_grants SET proposal_id = 'P-other' WHERE id = ?", (grant_id,)
        )


def test_minting_refuses_unknown_closed_and_bad_inputs(store: Store) -> None:
    with pytest.raises(NotFound):
        mint(store, "P-does-not-exist")
    _, closed = insert_proposal(store, status="accepted")
    with pytest.raises(Conflict):
        mint(store, closed)
    _, proposal_id = insert_proposal(store)
    for ttl in (0, -1, MAX_TTL_SECONDS + 1):
        with pytest.raises(InvalidArgument):
            mint(store, proposal_id, ttl=ttl)
    with pytest.raises(InvalidArgument):
        store.grants.mint_grant(
            proposal_id=proposal_id,
            role="memory_oracle",
            agent_id="memory-oracle-1",
            tools=frozenset(),
            ttl_seconds=60,
            actor="operator",
        )
    with pytest.raises(InvalidArgument):
        mint(store, "../etc")
    assert store.grants.list_grants() == []


def test_revoke_by_proposal_and_by_launch_inside_a_caller_transaction(store: Store) -> None:
    _, p1 = insert_proposal(store)
    _, p2 = insert_proposal(store)
    a, _ = mint(store, p1, launch_id="L-a")
    b, _ = mint(store, p1, launch_id="L-b")
    c, _ = mint(store, p2, launch_id="L-c")
    revoked = store.db.write(
        lambda conn: revoke_for_launch_in(conn, "L-a", actor="supervisor", reason="exit")
    )
    assert [grant.id for grant in revoked] == [a]
    revoked = store.db.write(
        lambda conn: revoke_for_proposal_in(conn, p1, actor="supervisor", reason="left review")
    )
    assert [grant.id for grant in revoked] == [b]
    live = store.grants.list_grants(active_only=True)
    assert [grant.id for grant in live] == [c]


def test_bind_launch_once(store: Store) -> None:
    _, proposal_id = insert_proposal(store)
    grant_id, _ = mint(store, proposal_id)
    assert store.grants.bind_launch(grant_id, "L-1", actor="supervisor").launch_id == "L-1"
    assert store.grants.bind_launch(grant_id, "L-1", actor="supervisor").launch_id == "L-1"
    with pytest.raises(Conflict):
        store.grants.bind_launch(grant_id, "L-2", actor="supervisor")


def test_operator_tokens(store: Store) -> None:
    issued = store.grants.mint_token(name="alice", actor="operator")
    assert issued.token not in repr(issued)
    who = store.grants.authenticate(issued.token)
    assert isinstance(who, TokenRecord)
    assert who.name == "alice"
    assert who.expires_at is None
    store.grants.revoke_token(who.id, actor="operator")
    with pytest.raises(Unauthenticated, match="revoked"):
        store.grants.authenticate(issued.token)
    with pytest.raises(InvalidArgument):
        store.grants.mint_token(name=" ", actor="operator")
    with pytest.raises(InvalidArgument):
        store.grants.mint_token(name="bob", actor="operator", ttl_seconds=0)
    timed = store.grants.mint_token(name="bob", actor="operator", ttl_seconds=60)
    record = store.grants.authenticate(timed.token)
    assert isinstance(record, TokenRecord) and record.expires_at is not None
    created = store.db.read(lambda conn: list_events(conn, types=("operator_token.created",)))
    assert [event.payload["name"] for event in created] == ["alice", "bob"]
    assert all(issued.token not in repr(event.to_dict()) for event in created)


def test_tokens_are_unique_and_random(store: Store) -> None:
    _, proposal_id = insert_proposal(store)
    tokens = {mint(store, proposal_id)[1] for _ in range(20)}
    assert len(tokens) == 20


# -- whole-string shapes and honest errors ---------------------------------------------------------


def test_labels_names_and_tokens_with_a_trailing_newline_are_refused(store: Store) -> None:
    """``^...$`` with ``re.match`` accepts ``"x\\n"``; every shape here is checked on the whole string."""
    _, proposal_id = insert_proposal(store)
    good: dict[str, Any] = {
        "proposal_id": proposal_id,
        "role": "memory_oracle",
        "agent_id": "memory-oracle-1",
        "tools": ORACLE_TOOLS,
        "ttl_seconds": 60,
        "actor": "operator",
        "launch_id": "L-1",
    }
    for field in ("proposal_id", "role", "agent_id", "launch_id"):
        with pytest.raises(InvalidArgument, match=field):
            store.grants.mint_grant(**{**good, field: f"{good[field]}\n"})
    with pytest.raises(InvalidArgument, match="tool"):
        store.grants.mint_grant(**{**good, "tools": frozenset({"memory.query\n"})})
    assert store.grants.list_grants() == []
    issued = store.grants.mint_grant(**good)
    with pytest.raises(InvalidArgument):
        store.grants.bind_launch(issued.record.id, "L-1\n", actor="supervisor")
    with pytest.raises(InvalidArgument):
        store.grants.revoke(f"{issued.record.id}\n", actor="operator")
    assert store.grants.get_grant(issued.record.id).revoked_at is None

    with pytest.raises(InvalidArgument, match="name"):
        store.grants.mint_token(name="alice\n", actor="operator")
    assert store.grants.list_tokens() == []
    alice = store.grants.mint_token(name="alice", actor="operator")
    with pytest.raises(InvalidArgument):
        store.grants.revoke_token(f"{alice.record.id}\n", actor="operator")

    for token in (issued.token, alice.token):
        with pytest.raises(Unauthenticated, match="malformed"):
            store.grants.authenticate(f"{token}\n")
        store.grants.authenticate(token)


def test_a_database_error_while_minting_is_not_reported_as_not_found(store: Store) -> None:
    """Only "no such proposal" is ``not_found``; a broken database is not (it is translated elsewhere)."""
    _, proposal_id = insert_proposal(store)
    store.db.connection().execute("ALTER TABLE proposals RENAME TO proposals_elsewhere")
    with pytest.raises(Exception) as caught:
        mint(store, proposal_id)
    error = caught.value
    assert not isinstance(error, NotFound)
    chain = [error, error.__cause__, error.__context__]
    assert any(isinstance(link, sqlite3.OperationalError) for link in chain), chain
    assert (
        store.db.read(lambda conn: conn.execute("SELECT count(*) FROM capability_grants").fetchone()[0]) == 0
    )


def test_one_grant_type_from_row_to_json(store: Store) -> None:
    task_id, proposal_id = insert_proposal(store)
    grant_id, token = mint(store, proposal_id, launch_id="L-1")
    grant = store.grants.authenticate(token)
    assert isinstance(grant, GrantRecord)
    assert grant == store.grants.get_grant(grant_id) == store.grants.list_grants()[0]
    with pytest.raises(AttributeError):
        grant.proposal_id = "P-other"  # type: ignore[misc]
    assert grant.to_dict() == {
        "id": grant_id,
        "role": "memory_oracle",
        "agent_id": "memory-oracle-1",
        "proposal_id": proposal_id,
        "task_id": task_id,
        "scopes": sorted({task_id, "project"}),
        "tools": sorted(ORACLE_TOOLS),
        "launch_id": "L-1",
        "created_by": "operator",
        "created_at": grant.created_at,
        "expires_at": grant.expires_at,
        "revoked_at": None,
        "revoked_reason": None,
    }
    operator = store.grants.mint_token(name="alice", actor="operator").record
    assert list(operator.to_dict()) == [
        "id",
        "name",
        "created_by",
        "created_at",
        "expires_at",
        "revoked_at",
        "kind",
    ]
    assert operator.to_dict()["kind"] == "operator"
    assert store.grants.list_tokens() == [operator]
