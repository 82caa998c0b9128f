"""Serving past loopback: the bind rule, TLS with a real certificate, and ``serve`` refusing plain HTTP.

The certificates are real (a throwaway CA and a leaf it signed, :mod:`tests.capabilities.serving._certs`);
the clients are the real MCP client and an HTTP client that trust only that CA.
"""

from __future__ import annotations

import json
import signal
import ssl
import subprocess
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from anyio.streams.text import TextReceiveStream
from cryptography.hazmat.primitives.asymmetric import ec

from capabilities.services import Services
from capabilities.serving import (
    BoundAddress,
    assume_https,
    build_service_app,
    check_bind_host,
    load_server_tls,
    serving,
)
from capabilities.serving._transports import build_asgi_app
from store import ProjectPaths, Store, open_store
from store.errors import InvalidArgument
from tests.capabilities.http_helpers import http_client, mcp_client
from tests.capabilities.serving._certs import TestPKI, make_pki, write_key

REMOTE = ("0.0.0.0", "192.168.1.10", "::", "example.com")  # noqa: S104


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> TestPKI:
    """One CA and server certificate for the module (key generation is the slow part)."""
    return make_pki(tmp_path_factory.mktemp("pki"))


def test_loopback_is_always_allowed_and_remote_needs_allow_remote() -> None:
    for host in ("127.0.0.1", "127.0.0.2", "::1", "localhost"):
        check_bind_host(host, allow_remote=False)
    for host in REMOTE:
        with pytest.raises(InvalidArgument, match="--allow-remote"):
            check_bind_host(host, allow_remote=False, tls=True)


def test_a_remote_bind_over_plain_http_is_refused_naming_the_fix() -> None:
    for host in REMOTE:
        with pytest.raises(InvalidArgument, match="plain HTTP") as refused:
            check_bind_host(host, allow_remote=True)
        assert "--tls-cert" in str(refused.value) and "--behind-tls-proxy" in str(refused.value)
        check_bind_host(host, allow_remote=True, tls=True)
        check_bind_host(host, allow_remote=True, behind_tls_proxy=True)
    with pytest.raises(InvalidArgument, match="not both"):
        check_bind_host("127.0.0.1", allow_remote=False, tls=True, behind_tls_proxy=True)


def test_bad_certificate_files_are_clear_errors_naming_the_file(pki: TestPKI, tmp_path: Path) -> None:
    missing = tmp_path / "missing.pem"
    with pytest.raises(InvalidArgument, match="cannot read the TLS certificate") as error:
        load_server_tls(missing, pki.key)
    assert str(missing) in str(error.value)
    with pytest.raises(InvalidArgument, match="cannot read the TLS key"):
        load_server_tls(pki.cert, missing)
    garbage = tmp_path / "garbage.pem"
    garbage.write_text("not a certificate\n")
    with pytest.raises(InvalidArgument, match="not a PEM certificate chain"):
        load_server_tls(garbage, pki.key)
    other = write_key(tmp_path / "other.key", ec.generate_private_key(ec.SECP256R1()))
    with pytest.raises(InvalidArgument, match="is not the key of the certificate"):
        load_server_tls(pki.cert, other)
    locked = write_key(tmp_path / "locked.key", ec.generate_private_key(ec.SECP256R1()), passphrase=b"pw")
    with pytest.raises(InvalidArgument, match="is encrypted"):
        load_server_tls(pki.cert, locked)  # and no prompt on the terminal: the test would hang
    assert load_server_tls(pki.cert, pki.key).context.minimum_version >= ssl.TLSVersion.TLSv1_2


@pytest.mark.anyio
async def test_mcp_and_the_http_api_over_tls_and_plain_http_fails(
    pki: TestPKI, services: Services, store: Store
) -> None:
    token = store.grants.mint_token(name="alice", actor="operator").token
    store.memory.record(scope="S", kind="decision", title="over tls", body_md="b", actor="op")
    tls = load_server_tls(pki.cert, pki.key).context
    async with serving(build_service_app(services), host="127.0.0.1", tls=tls) as address:
        assert address.tls and address.base_url.startswith("https://127.0.0.1:")
        async with mcp_client(address, token, verify=pki.client_context()) as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            assert "memory.query" in names
        async with http_client(address, token, verify=pki.client_context()) as http:
            answer = await http.get(f"{address.base_url}/api/v1/memories")
            assert answer.status_code == 200
            assert [item["title"] for item in answer.json()["items"]] == ["over tls"]
            denied = await http.get(f"{address.base_url}/api/v1/memories", headers={"Authorization": ""})
            assert denied.status_code == 401
            assert 'resource_metadata="https://127.0.0.1:' in denied.headers["www-authenticate"]
        # The same port over plain HTTP gets no answer: no token is ever read off a clear connection.
        plain = address.base_url.replace("https://", "http://")
        async with http_client(address, token) as http:
            with pytest.raises(httpx2.HTTPError):
                await http.get(f"{plain}/api/v1/memories")
        # A client that does not trust the CA refuses the server.
        async with http_client(address, token, verify=ssl.create_default_context()) as http:
            with pytest.raises(httpx2.ConnectError):
                await http.get(f"{address.base_url}/api/v1/memories")


@pytest.mark.anyio
async def test_tls_on_a_unix_socket_is_refused(pki: TestPKI, services: Services, tmp_path: Path) -> None:
    tls = load_server_tls(pki.cert, pki.key).context
    with pytest.raises(InvalidArgument, match="TCP only"):
        async with serving(build_asgi_app(services), uds=tmp_path / "s.sock", tls=tls):
            pass
    assert not (tmp_path / "s.sock").exists()


@pytest.mark.anyio
async def test_behind_a_tls_proxy_derived_urls_say_https(services: Services) -> None:
    app = assume_https(build_service_app(services))
    async with serving(app, host="127.0.0.1") as address, http_client(address) as http:
        denied = await http.get(address.mcp_url)
    assert denied.status_code == 401
    assert f'resource_metadata="https://127.0.0.1:{address.port}/' in denied.headers["www-authenticate"]


# -- the command ----------------------------------------------------------------------------------


def _serve(argv: list[str], project: ProjectPaths, *args: str) -> tuple[int, dict[str, Any]]:
    done = subprocess.run(
        [*argv, "--json", "--root", str(project.root), "serve", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )
    return done.returncode, json.loads(done.stdout)


def test_serve_refuses_a_remote_bind_over_plain_http_before_binding(
    roundtable_argv: list[str], project: ProjectPaths, pki: TestPKI, tmp_path: Path
) -> None:
    code, error = _serve(roundtable_argv, project, "--host", "0.0.0.0", "--allow-remote")  # noqa: S104
    assert code == 1 and error["error"]["code"] == "invalid_argument"
    assert "--tls-cert" in error["error"]["message"] and "--behind-tls-proxy" in error["error"]["message"]
    code, error = _serve(roundtable_argv, project, "--tls-cert", str(pki.cert))
    assert code == 1 and "go together" in error["error"]["message"]
    other = write_key(tmp_path / "other.key", ec.generate_private_key(ec.SECP256R1()))
    args = ("--host", "0.0.0.0", "--allow-remote", "--tls-cert", str(pki.cert), "--tls-key", str(other))  # noqa: S104
    code, error = _serve(roundtable_argv, project, *args)
    assert code == 1 and "is not the key of the certificate" in error["error"]["message"]


@pytest.mark.anyio
async def test_serve_over_tls_on_every_address(
    roundtable_argv: list[str], project: ProjectPaths, pki: TestPKI
) -> None:
    config = project.root / ".roundtable" / "config.toml"
    config.write_text(config.read_text().replace("warm_pool = 2", "warm_pool = 0", 1))
    store = open_store(project)
    token = store.grants.mint_token(name="alice", actor="operator").token
    store.close()
    tls = ("--tls-cert", str(pki.cert), "--tls-key", str(pki.key))
    where = ("--host", "0.0.0.0", "--allow-remote", "--port", "0")  # noqa: S104
    argv = [*roundtable_argv, "--json", "--root", str(project.root), "serve", *where, *tls]
    with anyio.fail_after(60):
        async with await anyio.open_process(argv) as process:
            assert process.stderr is not None and process.stdout is not None
            ready: dict[str, Any] = {}
            async for chunk in TextReceiveStream(process.stderr):
                ready = next((json.loads(line) for line in chunk.splitlines() if "serve.ready" in line), {})
                if ready:
                    break
            assert ready["tls"] == "served" and ready["url"].startswith("https://0.0.0.0:")
            address = BoundAddress(host="127.0.0.1", port=int(ready["url"].rsplit(":", 1)[1]), tls=True)
            async with mcp_client(address, token, verify=pki.client_context()) as client:
                assert "memory.query" in {tool.name for tool in (await client.list_tools()).tools}
            async with http_client(address, token, verify=pki.client_context()) as http:
                assert (await http.get(f"{address.base_url}/api/v1/proposals")).status_code == 200
            process.send_signal(signal.SIGTERM)
            out = b"".join([chunk async for chunk in process.stdout])
            assert await process.wait() == 0
    assert json.loads(out)["url"].startswith("https://")
