"""The web console over real HTTP (no browser): login, sessions, CSRF, escaping and curation forms."""

from __future__ import annotations

import re
import sqlite3
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx2
import pytest

from capabilities.auth import issue_capability
from capabilities.services import Services
from capabilities.serving import WebService
from tests.capabilities.api_helpers import Api, closures_among, running_api, seed_review, table_counts

pytestmark = pytest.mark.anyio

_CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')


def csrf_of(page: str) -> str:
    found = _CSRF.search(page)
    assert found is not None, page
    return found.group(1)


@asynccontextmanager
async def browser_like(api: Api) -> AsyncIterator[httpx2.AsyncClient]:
    """A cookie-keeping client on the console (no bearer token: the console has its own login)."""
    async with httpx2.AsyncClient(base_url=api.address.base_url, timeout=30) as client:
        yield client


async def log_in(client: httpx2.AsyncClient, token: str, next_path: str = "/") -> httpx2.Response:
    form = await client.get("/login", params={"next": next_path})
    return await client.post(
        "/login", data={"csrf_token": csrf_of(form.text), "token": token, "next": next_path}
    )


async def test_pages_need_a_session_and_login_sets_a_strict_httponly_cookie(services: Services) -> None:
    seeded = seed_review(services.store)
    async with running_api(services) as api, browser_like(api) as client:
        path = f"/proposals/{seeded['proposal_id']}"
        redirected = await client.get(path)
        assert redirected.status_code == 303
        assert redirected.headers["location"] == f"/login?next={path.replace('/', '%2F')}"
        answer = await log_in(client, api.token, path)
        assert (answer.status_code, answer.headers["location"]) == (303, path)
        cookie = answer.headers["set-cookie"]
        assert "rt_session=" in cookie and "HttpOnly" in cookie and "SameSite=strict" in cookie
        assert api.token not in cookie and api.token not in answer.headers["location"]
        page = await client.get(path)
        assert page.status_code == 200
        assert "Shouting contradicts a recorded decision." in page.text
        assert api.token not in page.text
        assert "script-src 'self'" in page.headers["content-security-policy"]
        assert page.headers["x-frame-options"] == "DENY"

        def stored(conn: sqlite3.Connection) -> list[str]:
            return [row[0] for row in conn.execute("SELECT id_sha256 FROM console_sessions")]

        (digest,) = services.store.db.read(stored)
        assert client.cookies["rt_session"] not in digest  # only the hash is stored


@pytest.mark.parametrize("kind", ["bad", "capability", "no-csrf"])
async def test_login_refusals(services: Services, kind: str) -> None:
    proposal_id = seed_review(services.store)["proposal_id"]
    async with running_api(services) as api, browser_like(api) as client:
        form = await client.get("/login")
        token = {
            "bad": "x" * 43,
            "capability": issue_capability(
                services.store, proposal_id=proposal_id, role="memory_oracle", actor="operator"
            ).token,
            "no-csrf": api.token,
        }[kind]
        csrf = "wrong" if kind == "no-csrf" else csrf_of(form.text)
        answer = await client.post("/login", data={"csrf_token": csrf, "token": token})
        assert answer.status_code in (401, 403)
        assert 'role="alert"' in answer.text
        assert "rt_session" not in client.cookies
        assert (await client.get("/")).status_code == 303


async def test_forms_need_the_session_csrf_token_and_the_same_origin(services: Services) -> None:
    async with running_api(services) as api, browser_like(api) as client:
        memory = await api.client.post(
            "/memories", json={"scope": "p", "kind": "k", "title": "t", "body_md": "b"}
        )
        mid = memory.json()["memory"]["id"]
        await log_in(client, api.token)
        page = await client.get(f"/memories/{mid}")
        csrf = csrf_of(page.text)
        before = table_counts(api.store)
        refused = await client.post(f"/memories/{mid}/action", data={"action": "pin", "csrf_token": "forged"})
        assert refused.status_code == 403
        cross_site = await client.post(
            f"/memories/{mid}/action",
            data={"action": "pin", "csrf_token": csrf},
            headers={"Origin": "https://evil.example"},
        )
        assert cross_site.status_code == 403
        assert table_counts(api.store) == before
        done = await client.post(
            f"/memories/{mid}/action",
            data={"action": "pin", "csrf_token": csrf},
            headers={"Origin": api.address.base_url},
        )
        assert (done.status_code, done.headers["location"]) == (303, f"/memories/{mid}?notice=pin")
        assert (await api.client.get(f"/memories/{mid}")).json()["memory"]["pinned"] is True
        conflict = await client.post(f"/memories/{mid}/action", data={"action": "pin", "csrf_token": csrf})
        assert conflict.status_code == 409 and "pin applies to an unpinned entry" in conflict.text

        revised = await client.post(
            f"/memories/{mid}/revise",
            data={
                "csrf_token": csrf,
                "expected_revision": "1",
                "title": "New title",
                "body_md": "line one\r\nline two",
                "reason": "clarify",
            },
        )
        assert revised.status_code == 303
        memory_now = (await api.client.get(f"/memories/{mid}")).json()["memory"]
        assert (memory_now["title"], memory_now["body_md"], memory_now["revision"]) == (
            "New title",
            "line one\nline two",
            2,
        )

        def audit(conn: sqlite3.Connection) -> list[tuple[str, str]]:
            return [
                tuple(r)
                for r in conn.execute("SELECT action, actor FROM audit_log WHERE target_id = ?", (mid,))
            ]

        assert api.store.db.read(audit) == [
            ("memory.created", "alice"),
            ("memory.pin", "alice"),
            ("memory.revised", "alice"),
        ]


async def test_logout_and_revocation_end_the_session(services: Services) -> None:
    issued = services.store.grants.mint_token(name="alice", actor="operator")
    async with running_api(services, token=issued.token) as api:
        async with browser_like(api) as client:
            await log_in(client, api.token)
            page = await client.get("/")
            assert page.status_code == 200
            assert "Signed in as alice" in page.text
            out = await client.post("/logout", data={"csrf_token": csrf_of(page.text)})
            assert (out.status_code, out.headers["location"]) == (303, "/login")
            client.cookies.clear()
        async with browser_like(api) as client:
            await log_in(client, api.token)
            assert (await client.get("/")).status_code == 200
            services.store.grants.revoke_token(issued.record.id, actor="operator")
            assert (await client.get("/")).status_code == 303  # the session died with its token
            stream = await client.get("/console/events/stream")
            assert stream.status_code == 401


async def test_everything_a_store_holds_is_escaped(services: Services) -> None:
    async with running_api(services) as api, browser_like(api) as client:
        evil = '<script>alert("x")</script><img src=x onerror=alert(1)>'
        created = await api.client.post(
            "/memories", json={"scope": "p", "kind": "k", "title": evil, "body_md": evil, "tags": [evil]}
        )
        mid = created.json()["memory"]["id"]
        await log_in(client, api.token)
        for path in (f"/memories/{mid}", "/memories", f"/memories?q={evil}"):
            page = await client.get(path)
            assert page.status_code == 200
            assert "<script>alert" not in page.text and "<img src=x" not in page.text
            assert "&lt;script&gt;" in page.text
        assert (await client.get("/login", params={"next": "https://evil.example/"})).status_code == 200
        form = await client.get("/login", params={"next": "//evil.example"})
        assert 'name="next" value="/"' in form.text


async def test_unknown_pages_answer_html_errors(services: Services) -> None:
    async with running_api(services) as api, browser_like(api) as client:
        await log_in(client, api.token)
        missing = await client.get("/memories/M-none")
        assert missing.status_code == 404
        assert "memory_not_found" in missing.text
        assert (await client.get("/proposals/P-none")).status_code == 404
        assert (await client.get("/static/secret.txt")).status_code == 404
        assert (await client.get("/static/console.css")).headers["content-type"].startswith("text/css")


@pytest.mark.parametrize(
    "module",
    [
        "capabilities.console",
        "capabilities.console._pages",
        "capabilities.console._memory_pages",
        "capabilities.console._routes",
        "capabilities.http_api",
        "capabilities.http_api._stream",
        "capabilities.serving",
    ],
)
def test_each_web_module_imports_on_its_own(module: str) -> None:
    """No import cycle between the API and the console, whichever is imported first."""
    result = subprocess.run(
        [sys.executable, "-c", f"import {module}"], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr


def test_every_console_endpoint_is_a_module_level_function(services: Services) -> None:
    """No route factory: the console's handlers read the services from ``request.app.state``."""
    _api, *console = WebService(services).routes()
    assert len(console) == 13
    assert closures_among(console) == []


async def test_a_launched_reviewers_vote_shows_its_launch(services: Services) -> None:
    from capabilities.auth import principal_from_record
    from capabilities.mcp import call_tool
    from capabilities.mcp.tools import build_registry
    from store.launches import LaunchStatus
    from tests.store.work_helpers import DIFF, new_task

    store = services.store
    proposal, _ = store.proposals.create(
        task_id=new_task(store).id, agent_id="implementer-1", title="t", patch=DIFF, actor="op"
    )
    store.reviews.request_review(proposal_id=proposal["id"], actor="op")
    launch = store.launches.request(
        role="reviewer", agent_id="reviewer-2", proposal_id=proposal["id"], image="my-agent:7", provider="mcp"
    )
    issued = issue_capability(
        store, proposal_id=proposal["id"], role="reviewer", agent_id="reviewer-2", actor="supervisor",
        launch_id=launch.id,
    )  # fmt: skip
    principal = principal_from_record(store.grants.authenticate(issued.token))
    cast = await call_tool(
        services, build_registry(), principal, "vote.cast",
        {"proposal_id": proposal["id"], "vote": "revise", "reason_md": "tests fail"},
    )  # fmt: skip
    assert cast.ok, cast.body()
    store.launches.finish(launch.id, LaunchStatus.FAILED, exit_code=1, reason="nonzero_exit")
    async with running_api(services) as api, browser_like(api) as client:
        await log_in(client, api.token)
        page = (await client.get(f"/proposals/{proposal['id']}")).text
    assert "launched my-agent:7 (mcp)" in page, page
    assert "failed 1" in page
    # The terminal's timeline says the same.
    from supervisor.cli._timeline_text import render_timeline

    text = render_timeline(store.timeline.timeline(proposal["id"]))
    assert "reviewer-2 (Reviewer) revise" in text and "launched my-agent:7 (mcp)" in text, text
