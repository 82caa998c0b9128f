"""The console is the maintainers' desk: an agent token cannot open it (no session, no cookie)."""

from __future__ import annotations

import sqlite3

import pytest

from capabilities.auth import issue_agent_token
from capabilities.services import Services
from tests.capabilities.api_helpers import running_api, seed_review, table_counts
from tests.capabilities.console.test_console_http import browser_like, csrf_of, log_in

pytestmark = pytest.mark.anyio


def session_rows(services: Services) -> list[str]:
    """The token each stored console session belongs to."""

    def read(conn: sqlite3.Connection) -> list[str]:
        rows = conn.execute("SELECT token_id FROM console_sessions ORDER BY token_id")
        return [str(row[0]) for row in rows]

    return services.store.db.read(read)


@pytest.mark.parametrize("agent", ["reviewer-1", "implementer-1", "security-1"])
async def test_an_agent_token_cannot_log_in(services: Services, agent: str) -> None:
    seeded = seed_review(services.store)
    agent_token = issue_agent_token(services.store, name=f"{agent}-token", agent_id=agent, actor="operator")
    async with running_api(services) as api, browser_like(api) as client:
        before = table_counts(api.store, "console_sessions", "events", "audit_log")
        answer = await log_in(client, agent_token.token, f"/proposals/{seeded['proposal_id']}")
        assert answer.status_code == 401, answer.text
        assert 'role="alert"' in answer.text
        assert "only operator tokens" in answer.text
        assert agent_token.token not in answer.text
        assert "rt_session" not in client.cookies
        assert "rt_session=" not in answer.headers.get("set-cookie", "")
        assert table_counts(api.store, "console_sessions", "events", "audit_log") == before
        assert session_rows(services) == []
        # Still logged out: every page sends it back to the login form.
        assert (await client.get("/")).status_code == 303
        assert (await client.get(f"/proposals/{seeded['proposal_id']}")).status_code == 303

        # The same form with the operator's token opens a session (the refusal was the token's kind).
        opened = await log_in(client, api.token)
        assert opened.status_code == 303, opened.text
        assert "rt_session" in client.cookies
        (operator_token,) = [t for t in api.store.grants.list_tokens() if t.name == api.name]
        assert session_rows(services) == [operator_token.id]
        assert (await client.get("/")).status_code == 200


async def test_a_revoked_agent_token_is_refused_too(services: Services) -> None:
    """A revoked agent token is refused as well, and nothing is stored."""
    store = services.store
    revoked = issue_agent_token(store, name="gone", agent_id="reviewer-2", actor="operator")
    store.grants.revoke_token(revoked.record.id, actor="operator")
    async with running_api(services) as api, browser_like(api) as client:
        before = table_counts(api.store, "console_sessions")
        answer = await log_in(client, revoked.token)
        assert answer.status_code == 401
        assert "rt_session" not in client.cookies
        assert table_counts(api.store, "console_sessions") == before


async def test_console_changes_record_the_operator_token_of_the_session(services: Services) -> None:
    store = services.store
    issued = store.grants.mint_token(name="alice", actor="operator")
    entry = store.memory.record(scope="project", kind="fact", title="t", body_md="b", actor="operator")
    async with running_api(services, token=issued.token) as api, browser_like(api) as client:
        await log_in(client, issued.token)
        csrf = csrf_of((await client.get(f"/memories/{entry.id}")).text)
        done = await client.post(f"/memories/{entry.id}/action", data={"action": "pin", "csrf_token": csrf})
        assert done.status_code == 303, done.text

    def read(conn: sqlite3.Connection) -> list[tuple[str, str, str, str]]:
        rows = conn.execute(
            "SELECT a.action, a.actor, a.credential_id, e.credential_id FROM audit_log a"
            " JOIN events e ON e.id = a.event_id WHERE a.target_id = ? ORDER BY a.id",
            (entry.id,),
        ).fetchall()
        return [(r[0], r[1], r[2], r[3]) for r in rows]

    assert store.db.read(read) == [("memory.pin", "alice", issued.record.id, issued.record.id)]
