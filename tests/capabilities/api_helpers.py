"""Helpers for the HTTP API tests: the real service app served by uvicorn, and a client for it."""

from __future__ import annotations

import inspect
import json
import sqlite3
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import partial
from typing import Any

import anyio
import httpx2
from starlette.routing import BaseRoute, Route

from capabilities.services import Services
from capabilities.serving import WebService, build_service_app, prepare_shutdown
from capabilities.serving._transports import BoundAddress, serving
from store import Store, append_event
from store.events._log import Event
from tests.store.work_helpers import DIFF, DIFF_V2, new_task

__all__ = [
    "Api",
    "assert_error",
    "closures_among",
    "read_sse",
    "running_api",
    "seed_review",
    "table_counts",
]


@dataclass
class Api:
    """A running server and an authenticated client for ``/api/v1`` (actor header preset)."""

    address: BoundAddress
    client: httpx2.AsyncClient
    token: str
    name: str
    web: WebService
    store: Store

    @property
    def base(self) -> str:
        """The API's base URL."""
        return f"{self.address.base_url}/api/v1"


@asynccontextmanager
async def running_api(
    services: Services,
    *,
    name: str = "alice",
    token: str | None = None,
    web: WebService | None = None,
    uds: str | None = None,
) -> AsyncIterator[Api]:
    """Serve the whole service app on loopback TCP (or ``uds``) and yield a client for it."""
    store = services.store
    if token is None:
        token = store.grants.mint_token(name=name, actor="operator").token
    service = web or WebService(services)
    where: dict[str, Any] = {"uds": uds} if uds else {"host": "127.0.0.1"}
    app = build_service_app(services, web=service)
    # As `roundtable serve` does: open streams end first, so the shutdown is prompt.
    async with serving(app, on_shutdown=partial(prepare_shutdown, app), **where) as address:
        transport = httpx2.AsyncHTTPTransport(uds=uds) if uds else None
        async with httpx2.AsyncClient(
            transport=transport,
            base_url=f"{address.base_url}/api/v1",
            headers={"Authorization": f"Bearer {token}", "X-Actor-ID": name},
            timeout=30,
        ) as client:
            yield Api(address, client, token, name, service, store)


def assert_error(response: httpx2.Response, status: int, code: str) -> dict[str, Any]:
    """The one error shape: exactly ``{"error": {"code", "message"[, "details"]}}`` as JSON."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"error"}, body
    assert {"code", "message"} <= set(body["error"]) <= {"code", "message", "details"}, body
    assert body["error"]["code"] == code, body
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]
    assert "Traceback" not in response.text
    error: dict[str, Any] = body["error"]
    return error


def closures_among(routes: Iterable[BaseRoute]) -> list[str]:
    """The routes whose endpoint (under its ``endpoint``/``page`` wrapper) is defined inside a
    function rather than at module level, as ``"METHODS path"``."""
    found = []
    for route in routes:
        if isinstance(route, Route):
            handler = inspect.unwrap(route.endpoint)
            defined = handler if inspect.isfunction(handler) else type(handler)
            if "<locals>" in defined.__qualname__:
                found.append(f"{','.join(sorted(route.methods or ()))} {route.path}")
    return found


def table_counts(store: Store, *tables: str) -> dict[str, int]:
    """Row counts of ``tables`` (to prove a refused request changed nothing)."""
    names = tables or ("events", "audit_log", "memory_entries", "memory_revisions", "idempotency_keys")

    def read(conn: sqlite3.Connection) -> dict[str, int]:
        return {name: int(conn.execute(f"SELECT count(*) FROM {name}").fetchone()[0]) for name in names}

    return store.db.read(read)


def seed_review(store: Store) -> dict[str, Any]:
    """A proposal with two patch versions, three votes (one no longer counting), memory entries
    and an oracle warning citing two of them; returns the IDs."""
    task = new_task(store)
    proposal, _ = store.proposals.create(
        task_id=task.id, agent_id="implementer-1", title="Shout line two", patch=DIFF, actor="op"
    )
    pid = proposal["id"]
    store.reviews.request_review(proposal_id=pid, actor="op")
    old_vote = store.reviews.cast(
        proposal_id=pid, agent_id="reviewer-1", vote="approve", reason_md="ok", actor="op"
    )
    decision = store.memory.record(
        scope="project", kind="decision", title="Keep lines quiet", body_md="Never shout.", actor="op"
    )
    constraint = store.memory.record(
        scope=task.id, kind="constraint", title="Lower case only", body_md="All lower case.", actor="op"
    )
    store.memory.record(
        memory_id=decision.id,
        scope="project",
        kind="decision",
        title="Keep lines quiet",
        body_md="Never shout.\nNot even line two.",
        actor="op",
    )

    def warn(conn: sqlite3.Connection) -> Event:
        return append_event(
            conn,
            "memory.oracle_warning",
            actor="memory-oracle-1",
            task_id=task.id,
            proposal_id=pid,
            payload={
                "proposal_id": pid,
                "task_id": task.id,
                "patch_version": 1,
                "patch_sha256": "0" * 64,
                "message_md": "Shouting contradicts a recorded decision.",
                "severity": "warning",
                "cited_memory_ids": [decision.id, constraint.id],
                "cited_event_ids": [],
                "grant_id": "C-test",
                "launch_id": "L-test",
            },
        )

    warning = store.db.write(warn)
    store.proposals.attach_patch(proposal_id=pid, patch=DIFF_V2, actor="op")
    new_vote = store.reviews.cast(
        proposal_id=pid, agent_id="reviewer-2", vote="approve", reason_md="fine", actor="op"
    )
    return {
        "task_id": task.id,
        "proposal_id": pid,
        "decision_id": decision.id,
        "constraint_id": constraint.id,
        "warning_event_id": warning.id,
        "old_vote_id": old_vote.vote.id,
        "new_vote_id": new_vote.vote.id,
    }


async def read_sse(lines: AsyncIterator[str], count: int, *, seconds: float = 20) -> list[dict[str, Any]]:
    """The next ``count`` events of a server-sent event stream (``id``, ``event``, parsed ``data``)."""
    events: list[dict[str, Any]] = []
    current: dict[str, Any] = {}
    with anyio.fail_after(seconds):
        async for line in lines:
            if line.startswith(":") or line.startswith("retry:"):
                continue
            if not line:
                if "data" in current:
                    events.append(current)
                    if len(events) == count:
                        return events
                current = {}
                continue
            field, _, value = line.partition(": ")
            current[field] = json.loads(value) if field == "data" else value
    return events
