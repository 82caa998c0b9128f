"""Who may call /api/v1: bearer tokens, the actor header, and Idempotency-Key replay from the database."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from capabilities.auth import issue_capability
from capabilities.services import Services
from store import ProjectPaths, open_store
from tests.capabilities.api_helpers import assert_error, running_api, table_counts
from tests.capabilities.http_helpers import insert_proposal

pytestmark = pytest.mark.anyio

NEW = {"scope": "project", "kind": "decision", "title": "Use SQLite", "body_md": "WAL."}


@pytest.mark.parametrize("kind", ["tcp", "uds"])
async def test_every_api_route_needs_a_valid_bearer_token(
    services: Services, tmp_path: Path, kind: str
) -> None:
    uds = str(tmp_path / "api.sock") if kind == "uds" else None
    async with running_api(services, uds=uds) as api:
        transport = httpx2.AsyncHTTPTransport(uds=uds) if uds else None
        async with httpx2.AsyncClient(transport=transport, base_url=api.base, timeout=30) as anonymous:
            before = table_counts(api.store)
            for method, path in (
                ("GET", "/memories"),
                ("POST", "/memories"),
                ("GET", "/proposals"),
                ("GET", "/events"),
                ("GET", "/events/stream"),
                ("GET", "/openapi.json"),
                ("GET", "/no-such-route"),
            ):
                assert_error(await anonymous.request(method, path), 401, "unauthenticated")
                wrong = await anonymous.request(
                    method, path, headers={"Authorization": "Bearer not-a-real-token"}
                )
                assert_error(wrong, 401, "unauthenticated")
            in_query = await anonymous.get("/memories", params={"access_token": api.token})
            assert_error(in_query, 401, "unauthenticated")
            assert table_counts(api.store) == before
        assert (await api.client.get("/memories")).status_code == 200


async def test_revoked_tokens_are_refused_at_once(services: Services) -> None:
    issued = services.store.grants.mint_token(name="alice", actor="operator")
    async with running_api(services, token=issued.token) as api:
        assert (await api.client.get("/memories")).status_code == 200
        services.store.grants.revoke_token(issued.record.id, actor="operator")
        assert_error(await api.client.get("/memories"), 401, "unauthenticated")


async def test_role_capabilities_may_not_use_the_api(services: Services) -> None:
    _, proposal_id = insert_proposal(services.store)
    grant = issue_capability(services.store, proposal_id=proposal_id, role="memory_oracle", actor="operator")
    async with running_api(services, token=grant.token, name=grant.record.agent_id) as api:
        assert_error(await api.client.get("/memories"), 403, "forbidden")
        assert_error(await api.client.post("/memories", json=NEW), 403, "forbidden")
        assert table_counts(api.store)["memory_entries"] == 0


@pytest.mark.parametrize(
    ("headers", "status", "code"),
    [
        ({"X-Actor-ID": "mallory"}, 403, "forbidden"),
        ({"X-Actor-ID": "ALICE"}, 403, "forbidden"),
        ({"X-Actor-ID": ""}, 400, "invalid_argument"),
        (None, 400, "invalid_argument"),
    ],
)
async def test_fix_mutations_need_the_actor_header_of_the_token(
    services: Services, headers: dict[str, str] | None, status: int, code: str
) -> None:
    """The seed trusted X-Actor-ID alone; now it must name the token's operator."""
    async with running_api(services) as api:
        mid = (await api.client.post("/memories", json=NEW)).json()["memory"]["id"]
        before = table_counts(api.store)
        if headers is None:
            api.client.headers.pop("X-Actor-ID")
            headers = {}
        for path, body in (
            ("/memories", NEW),
            (f"/memories/{mid}/revisions", {"body_md": "x", "expected_revision": 1}),
            (f"/memories/{mid}/pin", None),
            (f"/memories/{mid}/resynthesize", None),
        ):
            assert_error(await api.client.post(path, json=body, headers=headers), status, code)
        assert table_counts(api.store) == before
        # Reads need no actor header.
        assert (await api.client.get(f"/memories/{mid}", headers=headers)).status_code == 200


async def test_idempotent_replay_returns_the_first_answer_and_changes_nothing(services: Services) -> None:
    async with running_api(services) as api:
        first = await api.client.post("/memories", json=NEW, headers={"Idempotency-Key": "create-1"})
        assert first.status_code == 201
        assert "idempotent-replayed" not in first.headers
        before = table_counts(api.store)
        # Same body, spelled differently (key order, whitespace): still the same request.
        replay = await api.client.post(
            "/memories",
            content=b'{"body_md": "WAL.",   "title": "Use SQLite", "kind": "decision", "scope": "project"}',
            headers={"Idempotency-Key": "create-1"},
        )
        assert (replay.status_code, replay.json()) == (201, first.json())
        assert replay.headers["idempotent-replayed"] == "true"
        assert table_counts(api.store) == before
        other_body = await api.client.post(
            "/memories", json={**NEW, "title": "Other"}, headers={"Idempotency-Key": "create-1"}
        )
        assert_error(other_body, 409, "conflict")
        mid = first.json()["memory"]["id"]
        other_route = await api.client.post(f"/memories/{mid}/pin", headers={"Idempotency-Key": "create-1"})
        assert_error(other_route, 409, "conflict")
        assert table_counts(api.store) == before
        assert_error(
            await api.client.post("/memories", json=NEW, headers={"Idempotency-Key": "bad key with spaces"}),
            400,
            "invalid_argument",
        )


async def test_a_failed_mutation_stores_no_key(services: Services) -> None:
    async with running_api(services) as api:
        mid = (await api.client.post("/memories", json=NEW)).json()["memory"]["id"]
        headers = {"Idempotency-Key": "unpin-1"}
        assert_error(
            await api.client.post(f"/memories/{mid}/unpin", headers=headers), 409, "memory_update_conflict"
        )
        assert table_counts(api.store)["idempotency_keys"] == 0
        assert (await api.client.post(f"/memories/{mid}/pin")).status_code == 200
        assert (await api.client.post(f"/memories/{mid}/unpin", headers=headers)).status_code == 200


async def test_concurrent_requests_with_one_key_make_one_change(services: Services) -> None:
    async with running_api(services) as api:
        answers: list[tuple[int, Any]] = []

        async def send() -> None:
            response = await api.client.post("/memories", json=NEW, headers={"Idempotency-Key": "race"})
            answers.append((response.status_code, response.json()))

        async with anyio.create_task_group() as tg:
            for _ in range(8):
                tg.start_soon(send)
        assert {status for status, _ in answers} == {201}
        assert len({answer["memory"]["id"] for _, answer in answers}) == 1
        assert table_counts(api.store)["memory_entries"] == 1


async def test_idempotency_keys_live_in_the_database_and_survive_a_restart(project: ProjectPaths) -> None:
    store = open_store(project)
    token = store.grants.mint_token(name="alice", actor="operator").token
    try:
        async with running_api(Services(store=store), token=token) as api:
            first = await api.client.post("/memories", json=NEW, headers={"Idempotency-Key": "survivor"})
            assert first.status_code == 201
    finally:
        store.close()

    def stored(conn: sqlite3.Connection) -> list[tuple[Any, ...]]:
        return [
            tuple(r) for r in conn.execute("SELECT actor, key, route, response_status FROM idempotency_keys")
        ]

    reopened = open_store(project)  # a new process would see exactly this
    try:
        assert reopened.db.read(stored) == [("alice", "survivor", "POST /api/v1/memories", 201)]
        before = table_counts(reopened)
        async with running_api(Services(store=reopened), token=token) as api:
            replay = await api.client.post("/memories", json=NEW, headers={"Idempotency-Key": "survivor"})
        assert (replay.status_code, replay.json()) == (201, first.json())
        assert replay.headers["idempotent-replayed"] == "true"
        assert table_counts(reopened) == before
    finally:
        reopened.close()
