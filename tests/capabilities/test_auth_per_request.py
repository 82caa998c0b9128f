"""Every request on a launch socket reads its grant's row, on the event loop, with nothing cached.

The bearer check runs inline on SQLite (no worker thread per request), so these tests pin that it
still answers from the row as it is now: a grant revoked by another process (the CLI) is refused on
the very next call, and a busy database moves the check to a worker thread without skipping it. On
PostgreSQL a read is a network round trip, so the check always runs on a worker thread, never on
the event loop (``PostgresDatabase.run_inline``).
"""

from __future__ import annotations

import json
import threading
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest
from mcp.shared.exceptions import MCPError

from capabilities.auth import issue_capability
from capabilities.services import Services
from capabilities.serving._transports import BoundAddress, build_launch_app, serving
from store import Store
from store.access import GrantRecord, TokenRecord
from tests.capabilities.http_helpers import http_client, insert_proposal, mcp_client
from tests.fakes.sqlite_busy import busy_inline_reads

pytestmark = pytest.mark.anyio


@pytest.fixture
async def launch(services: Services, tmp_path: Path) -> AsyncIterator[tuple[BoundAddress, str, str]]:
    """A launch socket serving one oracle grant: its address, the grant's ID and its token."""
    _, proposal_id = insert_proposal(services.store)
    issued = issue_capability(services.store, proposal_id=proposal_id, role="memory_oracle", actor="op")
    app = build_launch_app(services, issued.record.id)
    async with serving(app, uds=str(tmp_path / "launch.sock")) as bound:
        yield bound, issued.record.id, issued.token


def _record_threads(store: Store, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The thread of every bearer check from now on."""
    threads: list[int] = []
    authenticate = store.grants.authenticate

    def recording(token: str) -> GrantRecord | TokenRecord:
        threads.append(threading.get_ident())
        return authenticate(token)

    monkeypatch.setattr(store.grants, "authenticate", recording)
    return threads


async def _refusal(address: BoundAddress, token: str) -> str:
    """The 401 message a plain request with ``token`` gets."""
    async with http_client(address, token) as client:
        response = await client.post(address.mcp_url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
    assert response.status_code == 401, response.text
    message: str = response.json()["error"]["message"]
    return message


async def test_the_bearer_check_runs_on_the_event_loop(
    launch: tuple[BoundAddress, str, str], store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    address, _, token = launch
    threads = _record_threads(store, monkeypatch)
    async with mcp_client(address, token) as client:
        for _ in range(3):
            assert not (await client.call_tool("memory.query", {})).is_error
    assert len(threads) >= 3
    if store.db.backend == "postgresql":  # a network round trip: never made on the event loop
        assert threading.get_ident() not in threads
    else:
        assert set(threads) == {threading.get_ident()}


async def test_a_grant_revoked_by_the_cli_is_refused_on_the_very_next_call(
    launch: tuple[BoundAddress, str, str], store: Store, roundtable_argv: list[str]
) -> None:
    address, grant_id, token = launch
    async with mcp_client(address, token) as client:
        for _ in range(3):  # the inline connection is open and has read this grant live
            assert not (await client.call_tool("memory.query", {})).is_error
        # Another process revokes: nothing in this one is told.
        argv = [*roundtable_argv, "--json", "--root", str(store.paths.root), "capability", "revoke", grant_id]
        done = await anyio.run_process(argv)
        assert json.loads(done.stdout)["revoked"] is True
        with pytest.raises(MCPError):
            await client.call_tool("memory.query", {})
    assert "revoked" in await _refusal(address, token)


async def test_a_busy_database_moves_the_check_to_a_worker_and_still_reads_the_row(
    launch: tuple[BoundAddress, str, str], store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    if store.db.backend != "sqlite":
        pytest.skip("SQLite's busy answer to an inline read; PostgreSQL never reads inline")
    address, grant_id, token = launch
    busy = busy_inline_reads(store.db, monkeypatch)
    monkeypatch.setattr(store.db, "_inline", threading.local())  # the next inline read opens anew
    threads = _record_threads(store, monkeypatch)
    async with mcp_client(address, token) as client:
        assert not (await client.call_tool("memory.query", {})).is_error
        assert busy and busy[0].refused >= 1
        # Tried inline, refused busy, answered on a worker thread: the same check, later.
        assert threading.get_ident() in threads and set(threads) - {threading.get_ident()}
        store.grants.revoke(grant_id, actor="op")
        with pytest.raises(MCPError):
            await client.call_tool("memory.query", {})
    assert "revoked" in await _refusal(address, token)
