"""Protected-resource metadata (RFC 9728) and the 401 challenge that points at it, over real servers."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import pytest
from mcp.client.auth.utils import (
    build_protected_resource_metadata_discovery_urls,
    create_oauth_metadata_request,
    extract_field_from_www_auth,
    extract_resource_metadata_from_www_auth,
    handle_protected_resource_response,
)
from mcp.shared.auth import ProtectedResourceMetadata
from mcp.shared.auth_utils import check_resource_allowed, resource_url_from_server_url
from pydantic import ValidationError

from capabilities.auth import request_base_url
from capabilities.services import Services
from capabilities.serving import BoundAddress, build_service_app, serving
from store import Store
from tests.capabilities.http_helpers import http_client

pytestmark = pytest.mark.anyio

WELL_KNOWN = "/.well-known/oauth-protected-resource"
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}


@pytest.fixture(params=["tcp", "uds"])
async def address(
    request: pytest.FixtureRequest, services: Services, tmp_path: Path
) -> AsyncIterator[BoundAddress]:
    """The ``roundtable serve`` app on loopback TCP or on a Unix socket."""
    where: dict[str, Any] = (
        {"host": "127.0.0.1"} if request.param == "tcp" else {"uds": str(tmp_path / "rt.sock")}
    )
    async with serving(build_service_app(services), **where) as bound:
        yield bound


async def test_the_metadata_is_served_unauthenticated_at_both_well_known_paths(address: BoundAddress) -> None:
    async with http_client(address) as client:
        for path in (WELL_KNOWN, f"{WELL_KNOWN}/mcp"):
            response = await client.get(address.base_url + path)
            assert response.status_code == 200, response.text
            assert response.headers["content-type"] == "application/json"
            assert response.headers["cache-control"] == "no-store"
            assert response.json() == {
                "resource": address.mcp_url,  # http://localhost/mcp on the Unix socket
                "bearer_methods_supported": ["header"],
                "resource_name": "Roundtable",
            }
            assert (await client.post(address.base_url + path)).status_code == 405


async def test_a_401_points_at_the_metadata_and_says_why(address: BoundAddress, store: Store) -> None:
    metadata = f'resource_metadata="{address.base_url}{WELL_KNOWN}/mcp"'
    revoked = store.grants.mint_token(name="bob", actor="operator")
    store.grants.revoke_token(revoked.record.id, actor="operator")
    cases: list[tuple[dict[str, str], str, str | None]] = [
        ({}, "", None),  # no credentials: no error code (RFC 6750, 3.1)
        ({"Authorization": "Basic dXNlcjpwYXNz"}, "", None),  # another scheme's
        ({"Authorization": "Bearer " + "A" * 43}, "", "invalid_token"),  # unknown
        ({"Authorization": f"Bearer {revoked.token}"}, "", "invalid_token"),  # revoked
        ({"Authorization": "Bearer not/a/token"}, "", "invalid_request"),
        ({}, "?access_token=abc", "invalid_request"),
    ]
    async with http_client(address) as client:
        for headers, query, error in cases:
            for path in ("/mcp", "/api/v1/tasks"):
                response = await client.post(
                    address.base_url + path + query, json=PING, headers={**MCP_HEADERS, **headers}
                )
                assert response.status_code == 401, (path, headers, response.text)
                assert response.json()["error"]["code"] == "unauthenticated"
                challenge = response.headers["www-authenticate"]
                expected = f'Bearer realm="roundtable", {metadata}'
                assert challenge == expected + (f', error="{error}"' if error else ""), (headers, query)


async def test_the_mcp_sdk_discovers_and_reads_the_metadata(address: BoundAddress) -> None:
    """The SDK's own discovery steps, as its OAuth flow runs them after a 401 on ``/mcp``."""
    async with http_client(address) as client:
        refused = await client.post(address.mcp_url, json=PING, headers=MCP_HEADERS)
        assert refused.status_code == 401
        found = extract_resource_metadata_from_www_auth(refused)
        assert found == f"{address.base_url}{WELL_KNOWN}/mcp"
        assert extract_field_from_www_auth(refused, "realm") == "roundtable"
        urls = build_protected_resource_metadata_discovery_urls(found, address.mcp_url)
        # From the header, then the path-inserted and the root well-known URLs: all answer.
        assert urls == [found, found, f"{address.base_url}{WELL_KNOWN}"]
        for url in urls:
            answer = await client.send(create_oauth_metadata_request(url))
            assert answer.status_code == 200
            document = answer.json()
            # RFC 8707 as the SDK checks it: the document is about the URL the client used.
            assert check_resource_allowed(resource_url_from_server_url(address.mcp_url), document["resource"])
            # The SDK's model accepts every field published; it wants authorization_servers,
            # which Roundtable deliberately leaves out (there is no OAuth server: tokens are
            # minted with `roundtable token create`), so its OAuth flow stops here.
            with pytest.raises(ValidationError) as refusal:
                ProtectedResourceMetadata.model_validate(document)
            assert [error["loc"] for error in refusal.value.errors()] == [("authorization_servers",)]
            parsed = ProtectedResourceMetadata.model_validate(
                {**document, "authorization_servers": ["http://as.invalid"]}
            )
            assert str(parsed.resource) == address.mcp_url
            assert parsed.bearer_methods_supported == ["header"]
            assert parsed.resource_name == "Roundtable"
            assert await handle_protected_resource_response(answer) is None


def _scope(headers: list[tuple[bytes, bytes]], server: Any, scheme: str = "http") -> dict[str, Any]:
    return {"type": "http", "scheme": scheme, "headers": headers, "server": server}


def test_the_base_url_comes_from_the_host_header_or_the_socket() -> None:
    assert request_base_url(_scope([(b"host", b"example.org:8765")], ("10.0.0.1", 8765))) == (
        "http://example.org:8765"
    )
    assert request_base_url(_scope([(b"host", b"[::1]:9")], None, "https")) == "https://[::1]:9"
    # No Host header: the address the request arrived on, default ports left out.
    assert request_base_url(_scope([], ("127.0.0.1", 8765))) == "http://127.0.0.1:8765"
    assert request_base_url(_scope([], ("::1", 443), "https")) == "https://[::1]"
    assert request_base_url(_scope([], ("127.0.0.1", 80))) == "http://127.0.0.1"
    # A Unix socket: uvicorn reports (path, None); a client that sent no Host gets localhost.
    assert request_base_url(_scope([], ("/run/rt.sock", None))) == "http://localhost"
    assert request_base_url(_scope([], None)) == "http://localhost"
    # A Host that is not a plain host[:port] is never echoed (it would break out of the quotes).
    for hostile in (b'evil"x', b"a b", b"evil.example/path", b"x:99999999", b"", b"a\r\nb"):
        assert request_base_url(_scope([(b"host", hostile)], ("127.0.0.1", 8765))) == "http://127.0.0.1:8765"
    two = [(b"host", b"a.example"), (b"host", b"b.example")]
    assert request_base_url(_scope(two, ("/run/rt.sock", None))) == "http://localhost"


async def test_a_unix_socket_request_without_a_host_header_gets_localhost(
    services: Services, tmp_path: Path
) -> None:
    """HTTP/1.0 allows a request with no Host; the challenge still names a usable URL."""
    path = tmp_path / "rt.sock"
    raw = b""
    async with serving(build_service_app(services), uds=str(path)):
        stream = await anyio.connect_unix(str(path))
        async with stream:
            await stream.send(b"GET /mcp HTTP/1.0\r\n\r\n")
            with anyio.fail_after(10):
                while chunk := await _receive(stream):
                    raw += chunk
    head = raw.split(b"\r\n\r\n", 1)[0].decode("latin-1").lower().split("\r\n")
    assert head[0].startswith("http/1.1 401"), head
    assert (
        f'www-authenticate: bearer realm="roundtable", resource_metadata="http://localhost{WELL_KNOWN}/mcp"'
        in head
    ), head


async def _receive(stream: anyio.abc.SocketStream) -> bytes:
    try:
        return await stream.receive()
    except anyio.EndOfStream:
        return b""
