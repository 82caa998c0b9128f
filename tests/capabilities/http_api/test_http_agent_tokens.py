"""``/api/v1`` with agent tokens: each route is checked as the MCP tool it mirrors, ``X-Actor-ID``
must name the token's agent, role capabilities are refused everywhere, and every audit row and
event names the credential its change came through."""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest
from starlette.routing import Route

from capabilities.auth import issue_agent_token, issue_capability
from capabilities.http_api import api_routes
from capabilities.services import Services
from store import ProjectPaths, Store, open_store
from store.access import IssuedToken, TokenRecord
from tests.capabilities.api_helpers import Api, assert_error, running_api, seed_review
from tests.helpers import project_snapshot

pytestmark = pytest.mark.anyio

NEW = {"scope": "project", "kind": "decision", "title": "Use SQLite", "body_md": "WAL mode."}


def api_route_calls(seeded: dict[str, Any]) -> list[tuple[str, str]]:
    """``(method, path)`` of every route of ``/api/v1``, with real IDs from :func:`seed_review`."""
    ids = {
        "memory_id": seeded["decision_id"],
        "proposal_id": seeded["proposal_id"],
        "event_id": seeded["warning_event_id"],
    }
    calls = []
    for route in api_routes():
        assert isinstance(route, Route)
        for method in sorted((route.methods or set()) - {"HEAD"}):
            calls.append((method, route.path.format(**ids)))
    return calls


def memory_writes(calls: list[tuple[str, str]]) -> list[str]:
    """The memory mutations other than ``POST /memories``: revisions, merges, lifecycle actions."""
    return [path for method, path in calls if method == "POST" and path.startswith("/memories/")]


def agent_token(store: Store, agent_id: str) -> IssuedToken[TokenRecord]:
    return issue_agent_token(store, name=f"{agent_id}-token", agent_id=agent_id, actor="operator")


def credential_rows(store: Store, target_id: str) -> list[tuple[str, str, str | None, str | None]]:
    """``(action, actor, audit row credential, event credential)`` of the audit rows about ``target_id``."""

    def read(conn: sqlite3.Connection) -> list[tuple[str, str, str | None, str | None]]:
        rows = conn.execute(
            "SELECT a.action, a.actor, a.credential_id, e.credential_id FROM audit_log a"
            " LEFT JOIN events e ON e.id = a.event_id WHERE a.target_id = ? ORDER BY a.id",
            (target_id,),
        ).fetchall()
        return [(r[0], r[1], r[2], r[3]) for r in rows]

    return store.db.read(read)


def written_by(store: Store, memory_id: str) -> str | None:
    def read(conn: sqlite3.Connection) -> str | None:
        row = conn.execute("SELECT written_by FROM memory_entries WHERE id = ?", (memory_id,)).fetchone()
        assert row is not None
        return None if row[0] is None else str(row[0])

    return store.db.read(read)


async def post(api: Api, path: str, actor: str | None = None) -> Any:
    """A POST with an acceptable body for the route (so only the caller can be what is refused)."""
    headers = {} if actor is None else {"X-Actor-ID": actor}
    body: dict[str, Any] = {}
    if path.endswith("/revisions"):
        body = {"body_md": "changed", "expected_revision": 2}
    elif path.endswith("/feedback"):
        body = {"verdict": "confirmed"}
    elif path == "/memories":
        body = dict(NEW)
    params = {"target_id": "M-none"} if "/merge" in path else None
    return await api.client.post(path, json=body, params=params, headers=headers)


# -- reviewer -------------------------------------------------------------------------------------


async def test_a_reviewer_token_reads_proposals_timelines_patches_and_memory(services: Services) -> None:
    seeded = seed_review(services.store)
    pid, mid = seeded["proposal_id"], seeded["decision_id"]
    issued = agent_token(services.store, "reviewer-1")
    async with running_api(services, token=issued.token, name="reviewer-1") as api:
        listed = await api.client.get("/proposals")
        assert listed.status_code == 200, listed.text
        assert [item["id"] for item in listed.json()["items"]] == [pid]
        detail = await api.client.get(f"/proposals/{pid}")
        assert detail.status_code == 200, detail.text
        assert detail.json()["proposal"]["id"] == pid and len(detail.json()["votes"]) == 2
        timeline = await api.client.get(f"/proposals/{pid}/timeline")
        assert timeline.status_code == 200, timeline.text
        assert "memory.oracle_warning" in [event["type"] for event in timeline.json()["events"]]
        patch = await api.client.get(f"/proposals/{pid}/patch")
        assert patch.status_code == 200, patch.text
        assert patch.headers["x-patch-version"] == "2" and "+four" in patch.text
        memories = await api.client.get("/memories")
        assert memories.status_code == 200, memories.text
        assert {item["id"] for item in memories.json()["items"]} == {mid, seeded["constraint_id"]}
        for tail in ("", "/revisions", "/diff", "/graph", "/source-chain"):
            path = f"/memories/{mid}{tail}"
            answer = await api.client.get(path)
            assert answer.status_code == 200, (path, answer.text)
        assert (await api.client.get(f"/memories/{mid}")).json()["memory"]["id"] == mid


async def test_a_reviewer_token_is_refused_the_event_log_and_every_memory_write(
    services: Services, project: ProjectPaths
) -> None:
    seeded = seed_review(services.store)
    issued = agent_token(services.store, "reviewer-1")
    calls = api_route_calls(seeded)
    async with running_api(services, token=issued.token, name="reviewer-1") as api:
        before = project_snapshot(project)
        for path in ("/events", "/events/stream", "/oracle/stats"):
            assert_error(await api.client.get(path), 403, "forbidden")
        # Reviewer has no memory.record: no POST /memories, though the actor header is its own.
        assert_error(await post(api, "/memories"), 403, "forbidden")
        # Curation (revisions, merges, pin/archive/...) and oracle feedback are the operator's.
        curation = memory_writes(calls)
        assert {
            f"/memories/{seeded['decision_id']}/{tail}" for tail in ("archive", "revisions", "merge")
        } <= set(curation)
        for path in [*curation, f"/warnings/{seeded['warning_event_id']}/feedback"]:
            assert_error(await post(api, path), 403, "forbidden")
        assert project_snapshot(project) == before


# -- implementer ----------------------------------------------------------------------------------


async def test_an_implementer_token_records_memory_as_itself(
    services: Services, project: ProjectPaths
) -> None:
    store = services.store
    issued = agent_token(store, "implementer-1")
    async with running_api(services, token=issued.token, name="implementer-1") as api:
        created = await api.client.post("/memories", json=NEW)
        assert created.status_code == 201, created.text
        memory = created.json()["memory"]
        assert written_by(store, memory["id"]) == "agent:implementer-1"
        assert credential_rows(store, memory["id"]) == [
            ("memory.created", "implementer-1", issued.record.id, issued.record.id)
        ]
        (event,) = [
            e for e in store.event_feed.after(0, limit=500) if e.payload.get("memory_id") == memory["id"]
        ]
        assert (event.actor, event.credential_id) == ("implementer-1", issued.record.id)

        before = project_snapshot(project)
        # X-Actor-ID names the token's agent, nobody else (not even the token's own name).
        for actor in ("implementer-2", "reviewer-1", "implementer-1-token", "alice", "IMPLEMENTER-1"):
            assert_error(await post(api, "/memories", actor), 403, "forbidden")
        assert_error(await post(api, "/memories", ""), 400, "invalid_argument")
        assert project_snapshot(project) == before


async def test_an_implementer_token_curates_nothing_not_even_its_own_entry(
    services: Services, project: ProjectPaths
) -> None:
    seeded = seed_review(services.store)
    issued = agent_token(services.store, "implementer-1")
    async with running_api(services, token=issued.token, name="implementer-1") as api:
        own = (await api.client.post("/memories", json=NEW)).json()["memory"]["id"]
        before = project_snapshot(project)
        for mid in (own, seeded["decision_id"]):
            for path in memory_writes(api_route_calls({**seeded, "decision_id": mid})):
                assert_error(await post(api, path), 403, "forbidden")
        assert_error(await api.client.get("/events"), 403, "forbidden")
        assert project_snapshot(project) == before
        assert (await api.client.get(f"/memories/{own}")).json()["memory"]["status"] == "active"


# -- role capabilities ------------------------------------------------------------------------------


async def test_a_capability_token_is_refused_on_every_api_route(
    services: Services, project: ProjectPaths
) -> None:
    seeded = seed_review(services.store)
    grant = issue_capability(
        services.store, proposal_id=seeded["proposal_id"], role="memory_oracle", actor="operator"
    )
    calls = api_route_calls(seeded)
    assert len(calls) >= 20
    async with running_api(services, token=grant.token, name=grant.record.agent_id) as api:
        before = project_snapshot(project)
        for method, path in calls:
            answer = await api.client.get(path) if method == "GET" else await post(api, path)
            assert_error(answer, 403, "forbidden")
        assert project_snapshot(project) == before


# -- credentials on record --------------------------------------------------------------------------


async def test_operator_token_mutations_record_the_token_in_audit_rows_and_events(services: Services) -> None:
    store = services.store
    issued = store.grants.mint_token(name="alice", actor="operator")
    other = store.grants.mint_token(name="bob", actor="operator")
    async with running_api(services, token=issued.token, name="alice") as api:
        mid = (await api.client.post("/memories", json=NEW)).json()["memory"]["id"]
        for path, body in (
            (f"/memories/{mid}/revisions", {"body_md": "v2", "expected_revision": 1}),
            (f"/memories/{mid}/pin", None),
            (f"/memories/{mid}/archive", None),
        ):
            response = await api.client.post(path, json=body)
            assert response.status_code == 200, response.text
    async with running_api(services, token=other.token, name="bob") as api:
        response = await api.client.post(f"/memories/{mid}/restore")
        assert response.status_code == 200, response.text
    first, second = issued.record.id, other.record.id
    assert credential_rows(store, mid) == [
        ("memory.created", "alice", first, first),
        ("memory.revised", "alice", first, first),
        ("memory.pin", "alice", first, first),
        ("memory.archive", "alice", first, first),
        ("memory.restore", "bob", second, second),
    ]


async def test_a_revoked_agent_token_is_refused_at_once(services: Services) -> None:
    store = services.store
    issued = agent_token(store, "reviewer-2")
    async with running_api(services, token=issued.token, name="reviewer-2") as api:
        assert (await api.client.get("/proposals")).status_code == 200
        store.grants.revoke_token(issued.record.id, actor="operator")
        assert_error(await api.client.get("/proposals"), 401, "unauthenticated")
        assert_error(await api.client.get("/memories"), 401, "unauthenticated")


async def test_taking_an_agent_off_the_roster_retires_its_token_when_the_service_restarts(
    services: Services, project: ProjectPaths
) -> None:
    """The roster is the configuration a service opened with: a restart retires the agent's tokens
    (``token revoke`` retires one at once, without a restart)."""
    issued = agent_token(services.store, "reviewer-1")
    config = project.root / ".roundtable" / "config.toml"
    text = config.read_text()
    assert '"reviewer-1" = "Reviewer"' in text
    async with running_api(services, token=issued.token, name="reviewer-1") as api:
        assert (await api.client.get("/proposals")).status_code == 200
        config.write_text(text.replace('"reviewer-1" = "Reviewer"', ""))
    restarted = Services(open_store(project))
    try:
        async with running_api(restarted, token=issued.token, name="reviewer-1") as api:
            assert_error(await api.client.get("/proposals"), 401, "unauthenticated")
    finally:
        restarted.store.close()
