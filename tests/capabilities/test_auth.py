"""Bearer authentication over HTTP: 401s, per-request re-verification, launch sockets, no token leak."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import structlog
from mcp.shared.exceptions import MCPError
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from capabilities.auth import Authenticator, bearer_token, issue_capability, principal_from_record
from capabilities.policy import MEMORY_ORACLE_TOOLS
from capabilities.principals import PrincipalKind
from capabilities.services import Services
from capabilities.serving._transports import BoundAddress, build_asgi_app, build_launch_app, serving
from store import GrantRecord, Store
from store._ids import utc_now
from store.errors import InvalidArgument, Unauthenticated
from store.events._log import list_events
from tests.capabilities.http_helpers import body, http_client, insert_proposal, mcp_client
from tests.helpers import project_snapshot

pytestmark = pytest.mark.anyio

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"},
    },
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def oracle_token(store: Store, *, ttl: int = 600, launch_id: str | None = None) -> tuple[str, str]:
    _, proposal_id = insert_proposal(store)
    issued = issue_capability(
        store,
        proposal_id=proposal_id,
        role="memory_oracle",
        actor="operator",
        ttl_seconds=ttl,
        launch_id=launch_id,
    )
    return issued.record.id, issued.token


@pytest.fixture(params=["tcp", "uds"])
async def address(
    request: pytest.FixtureRequest, services: Services, tmp_path: Path
) -> AsyncIterator[BoundAddress]:
    """The full app, served on TCP or on a Unix socket."""
    where: dict[str, Any] = (
        {"host": "127.0.0.1"} if request.param == "tcp" else {"uds": str(tmp_path / "rt.sock")}
    )
    async with serving(build_asgi_app(services), **where) as bound:
        yield bound


# -- header parsing --------------------------------------------------------------------------------


def test_bearer_token_parsing() -> None:
    token = "A" * 43
    assert bearer_token([(b"authorization", f"Bearer {token}".encode())], b"") == token
    assert bearer_token([(b"Authorization", f"bearer {token}".encode())], b"x=1") == token
    bad_headers: list[list[tuple[bytes, bytes]]] = [
        [],
        [(b"authorization", b"Basic dXNlcjpwYXNz")],
        [(b"authorization", b"Bearer")],
        [(b"authorization", b"Bearer ")],
        [(b"authorization", f"Bearer {token} extra".encode())],
        [(b"authorization", f"Bearer {token}!".encode())],
        [(b"authorization", f"Bearer {token}".encode()), (b"authorization", f"Bearer {token}".encode())],
    ]
    for headers in bad_headers:
        with pytest.raises(Unauthenticated):
            bearer_token(headers, b"")
    for query in (b"access_token=x", b"token=x", b"TOKEN=x", b"a=1&api_key=x", b"Authorization=Bearer+x"):
        with pytest.raises(Unauthenticated, match="only in the Authorization header"):
            bearer_token([(b"authorization", f"Bearer {token}".encode())], query)


def test_a_bearer_header_is_matched_whole_so_a_trailing_newline_is_malformed() -> None:
    token = "A" * 43
    # HTTP's optional whitespace around a value is allowed; CR and LF are not part of a header value.
    assert bearer_token([(b"authorization", f" \tBearer {token} \t".encode())], b"") == token
    for value in (f"Bearer {token}\n", f"Bearer {token}\r\n", f"Bearer {token}\nX", f"\nBearer {token}"):
        with pytest.raises(Unauthenticated, match="malformed"):
            bearer_token([(b"authorization", value.encode())], b"")


def test_a_capability_principal_carries_the_grant_record_itself(store: Store) -> None:
    _, token = oracle_token(store, launch_id="L-1")
    record = store.grants.authenticate(token)
    assert isinstance(record, GrantRecord)
    principal = principal_from_record(record)
    assert principal.grant is record
    assert principal.credential_id == record.id and principal.role == record.role == "memory_oracle"
    assert principal.grant.launch_id == "L-1" and principal.grant.scopes == record.scopes


def test_issue_capability_refuses_unknown_and_operator_roles(store: Store) -> None:
    _, proposal_id = insert_proposal(store)
    for role in ("operator", "reviewer", ""):
        with pytest.raises(InvalidArgument):
            issue_capability(store, proposal_id=proposal_id, role=role, actor="operator")
    issued = issue_capability(store, proposal_id=proposal_id, role="memory_oracle", actor="operator")
    assert issued.record.tools == MEMORY_ORACLE_TOOLS
    principal = principal_from_record(store.grants.authenticate(issued.token))
    assert principal.kind is PrincipalKind.CAPABILITY
    assert principal.grant is not None and principal.grant.proposal_id == proposal_id
    assert principal.actor == "memory-oracle-1"


async def test_launch_authenticator_accepts_only_its_grant(store: Store) -> None:
    grant_a, token_a = oracle_token(store)
    _, token_b = oracle_token(store)
    operator = store.grants.mint_token(name="alice", actor="operator")
    only_a = Authenticator(store, only_grant_id=grant_a)
    assert (await only_a.authenticate(token_a)).grant is not None
    for token in (token_b, operator.token):
        with pytest.raises(Unauthenticated, match="its own launch"):
            await only_a.authenticate(token)


# -- over HTTP -------------------------------------------------------------------------------------


async def assert_401(address: BoundAddress, headers: dict[str, str], *, query: str = "") -> dict[str, Any]:
    async with http_client(address) as client:
        response = await client.post(
            address.mcp_url + query, json=INITIALIZE, headers={**MCP_HEADERS, **headers}
        )
    assert response.status_code == 401, response.text
    assert response.headers["www-authenticate"].startswith("Bearer")
    assert response.headers["content-type"] == "application/json"
    error: dict[str, Any] = response.json()["error"]
    assert error["code"] == "unauthenticated"
    assert error["message"]
    return error


async def test_missing_malformed_and_unknown_tokens_get_401(address: BoundAddress) -> None:
    await assert_401(address, {})
    await assert_401(address, {"Authorization": "Basic dXNlcjpwYXNz"})
    await assert_401(address, {"Authorization": "Bearer not a token"})
    await assert_401(address, {"Authorization": "Bearer short"})
    error = await assert_401(address, {"Authorization": "Bearer " + "Z" * 43})
    assert "Z" * 43 not in error["message"]


async def test_a_token_in_the_query_string_gets_401(address: BoundAddress, store: Store) -> None:
    _, token = oracle_token(store)
    await assert_401(address, {}, query=f"?access_token={token}")
    # Even beside a valid header: a token in a URL has leaked, so the request is refused.
    error = await assert_401(address, {"Authorization": f"Bearer {token}"}, query=f"?token={token}")
    assert token not in error["message"]


async def test_expired_and_revoked_grants_get_401_on_the_next_call(
    address: BoundAddress, store: Store
) -> None:
    grant_id, token = oracle_token(store, ttl=60)
    # Expiry is reached by moving the store's clock, not by waiting: a 1-second grant could lapse
    # on a loaded machine before its first call, which must still succeed.
    _, short = oracle_token(store, ttl=60)
    async with mcp_client(address, token) as client:
        assert not (await client.call_tool("memory.query", {})).is_error
        store.grants.revoke(grant_id, actor="operator")
        with pytest.raises(MCPError):
            await client.call_tool("memory.query", {})
    await assert_401(address, {"Authorization": f"Bearer {token}"})

    async with mcp_client(address, short) as client:
        assert not (await client.call_tool("memory.query", {})).is_error
        store.grants.clock = lambda: utc_now() + timedelta(seconds=61)  # the grant expires now
        with pytest.raises(MCPError):
            await client.call_tool("memory.query", {})
    error = await assert_401(address, {"Authorization": f"Bearer {short}"})
    assert "expired" in error["message"]


async def test_operator_tokens_authenticate_as_operators(address: BoundAddress, store: Store) -> None:
    issued = store.grants.mint_token(name="alice", actor="operator")
    async with mcp_client(address, issued.token) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert "memory.mark_stale" in names
        assert "oracle.warn" not in names
        recorded = body(
            await client.call_tool(
                "memory.record", {"scope": "project", "kind": "fact", "title": "t", "body_md": "b"}
            )
        )
    events = store.db.read(lambda conn: list_events(conn, types=("memory.recorded",)))
    assert [event.actor for event in events] == ["alice"]
    assert recorded["entry"]["source_proposal_id"] is None


async def test_launch_a_token_is_refused_on_launch_b_socket(
    services: Services, store: Store, tmp_path: Path
) -> None:
    grant_a, token_a = oracle_token(store, launch_id="L-a")
    grant_b, token_b = oracle_token(store, launch_id="L-b")
    operator = store.grants.mint_token(name="alice", actor="operator")
    async with (
        serving(build_launch_app(services, grant_a), uds=str(tmp_path / "a.sock")) as socket_a,
        serving(build_launch_app(services, grant_b), uds=str(tmp_path / "b.sock")) as socket_b,
    ):
        error = await assert_401(socket_b, {"Authorization": f"Bearer {token_a}"})
        assert "its own launch" in error["message"]
        await assert_401(socket_a, {"Authorization": f"Bearer {token_b}"})
        await assert_401(socket_a, {"Authorization": f"Bearer {operator.token}"})
        # Every path of a launch socket is guarded, not only /mcp.
        async with http_client(socket_a) as client:
            assert (await client.get("http://localhost/anything")).status_code == 401
        for address, token in ((socket_a, token_a), (socket_b, token_b)):
            async with mcp_client(address, token) as client:
                assert {tool.name for tool in (await client.list_tools()).tools} <= MEMORY_ORACLE_TOOLS
                assert not (await client.call_tool("memory.query", {})).is_error


async def test_the_raw_token_appears_in_no_file_log_or_event(
    services: Services, store: Store, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    grant_id, token = oracle_token(store)
    operator = store.grants.mint_token(name="alice", actor="operator")
    with structlog.testing.capture_logs() as structured:
        async with serving(build_asgi_app(services), uds=str(tmp_path / "s.sock")) as address:
            async with mcp_client(address, token) as client:
                await client.call_tool(
                    "memory.record", {"scope": "project", "kind": "f", "title": "t", "body_md": "b"}
                )
                await client.call_tool("memory.query", {"query": token})  # the token as an argument, too
                await client.call_tool("vote.cast", {"proposal_id": "P-x"})
            await assert_401(address, {}, query=f"?access_token={token}")
            await assert_401(address, {"Authorization": f"Bearer {token}x"})
            store.grants.revoke(grant_id, actor="operator")
            await assert_401(address, {"Authorization": f"Bearer {token}"})
            store.grants.revoke_token(operator.record.id, actor="operator")
            await assert_401(address, {"Authorization": f"Bearer {operator.token}"})
    # The server's logs: the client libraries in this same process log their own requests.
    client_side = ("mcp.client", "httpx2", "httpcore2")
    server_lines = [
        record.getMessage() for record in caplog.records if not record.name.startswith(client_side)
    ]
    logs = repr(structured) + "\n".join(server_lines)
    assert "auth.refused" in repr(structured)
    events = repr([event.to_dict() for event in store.db.read(lambda conn: list_events(conn, limit=100_000))])
    for secret in (token, operator.token):
        assert secret not in logs
        assert secret not in events
        for path in store.paths.state_dir.iterdir():  # roundtable.db, -wal, -shm
            if path.is_file():
                assert secret.encode() not in path.read_bytes(), path.name
    # Every row of the project's store: the SQLite dump, or each table of its PostgreSQL schema.
    dump = repr(project_snapshot(store.paths))
    if store.db.backend == "sqlite":
        dump += "\n".join(store.db.connection().iterdump())
    assert token not in dump and operator.token not in dump


async def test_an_unguarded_route_gets_no_principal(services: Services) -> None:
    async def whoami(request: Request) -> JSONResponse:
        return JSONResponse({"principal": repr(request.scope.get("roundtable.principal"))})

    app = build_asgi_app(services, extra_routes=[Route("/health", whoami), Route("/api/v1/whoami", whoami)])
    operator = services.store.grants.mint_token(name="alice", actor="operator")
    async with serving(app, host="127.0.0.1") as address:
        async with http_client(address) as client:
            assert (await client.get(address.base_url + "/health")).json() == {"principal": "None"}
            assert (await client.get(address.base_url + "/api/v1/whoami")).status_code == 401
            assert (await client.get(address.base_url + "//API/v1/whoami")).status_code == 401
        async with http_client(address, operator.token) as client:
            answer = (await client.get(address.base_url + "/api/v1/whoami")).json()
    assert "alice" in answer["principal"]
