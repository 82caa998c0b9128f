"""A role pod's channel: the capability endpoint over TCP with TLS and the bearer grant
(``ROUNDTABLE_CAPABILITY_URL`` and ``ROUNDTABLE_CA_FILE``), as a pod on a cluster uses it.

A throwaway CA (openssl) signs a certificate for 127.0.0.1; uvicorn serves a launch app with it on
loopback; the lean client and the SDK's client both connect through :mod:`roles.channel`, with the
server's certificate checked against the CA file. A certificate of another CA, and a plain-HTTP URL,
are refused before any token is sent.
"""

from __future__ import annotations

import socket
import ssl
import subprocess
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import anyio
import anyio.abc
import pytest
import uvicorn
from anyio.streams.tls import TLSStream

from capabilities.services import Services
from capabilities.serving import build_launch_app
from roles._unix_http import HttpError, TlsHttpClient
from roles.channel import EXIT_NO_CHANNEL, ChannelError, ChannelPaths, open_channel, open_tool_channel
from store import Store
from tests.capabilities.oracle_helpers import build_world

pytestmark = pytest.mark.anyio


def _openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True)


def _ca(directory: Path, name: str) -> tuple[Path, Path]:
    key, cert = directory / f"{name}.key", directory / f"{name}.pem"
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", f"/CN={name}",
             "-keyout", str(key), "-out", str(cert))  # fmt: skip
    return key, cert


def _server_cert(directory: Path, ca_key: Path, ca_cert: Path) -> tuple[Path, Path]:
    key, csr, cert, ext = (directory / n for n in ("srv.key", "srv.csr", "srv.pem", "srv.ext"))
    ext.write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n", encoding="utf-8")
    _openssl(
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-subj",
        "/CN=127.0.0.1",
        "-keyout",
        str(key),
        "-out",
        str(csr),
    )
    _openssl("x509", "-req", "-in", str(csr), "-CA", str(ca_cert), "-CAkey", str(ca_key), "-CAcreateserial",
             "-days", "1", "-extfile", str(ext), "-out", str(cert))  # fmt: skip
    return key, cert


class _Server(uvicorn.Server):
    """uvicorn's server, telling when its sockets accept."""

    def __init__(self, config: uvicorn.Config):
        super().__init__(config)
        self.ready = anyio.Event()

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        self.ready.set()


@dataclass(frozen=True)
class _Endpoint:
    url: str
    token_file: Path
    ca_file: Path
    other_ca: Path


@pytest.fixture
async def endpoint(store: Store, tmp_path: Path) -> AsyncIterator[_Endpoint]:
    world = build_world(store)
    ca_key, ca_cert = _ca(tmp_path, "ca")
    _, other_ca = _ca(tmp_path, "other")
    key, cert = _server_cert(tmp_path, ca_key, ca_cert)
    (tmp_path / "token").write_text(world.token)
    app = build_launch_app(Services(store=store), world.grant_id)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        app, ssl_keyfile=str(key), ssl_certfile=str(cert), log_level="warning", lifespan="on"
    )
    server = _Server(config)
    async with anyio.create_task_group() as group:
        group.start_soon(server.serve, [sock])
        await server.ready.wait()
        yield _Endpoint(f"https://127.0.0.1:{port}", tmp_path / "token", ca_cert, other_ca)
        server.should_exit = True
    sock.close()


def _paths(endpoint: _Endpoint, *, ca: Path | None = None, url: str | None = None) -> ChannelPaths:
    return ChannelPaths(
        Path("/nonexistent/mcp.sock"),
        endpoint.token_file,
        url=url or endpoint.url,
        ca_file=ca or endpoint.ca_file,
    )


async def test_the_lean_client_lists_tools_over_tls(endpoint: _Endpoint) -> None:
    async with open_tool_channel(_paths(endpoint)) as channel:
        names = {tool.name for tool in channel.tools}
    assert "memory.query" in names


async def test_the_sdk_client_connects_over_tls(endpoint: _Endpoint) -> None:
    async with open_channel(_paths(endpoint)) as channel:
        listed = await channel.client.list_tools()
    assert any(tool.name == "memory.query" for tool in listed.tools)


async def test_a_certificate_of_another_ca_is_refused(endpoint: _Endpoint) -> None:
    with pytest.raises(HttpError, match="CERTIFICATE_VERIFY_FAILED"):
        async with open_tool_channel(_paths(endpoint, ca=endpoint.other_ca)):
            pass


@pytest.mark.parametrize("url", ["http://127.0.0.1:1", "https://", "https://host/other/path", "ftp://x"])
def test_only_an_https_endpoint_is_a_channel(tmp_path: Path, url: str) -> None:
    (tmp_path / "token").write_text("t")
    paths = ChannelPaths(tmp_path / "mcp.sock", tmp_path / "token", url=url)
    with pytest.raises(ChannelError) as raised:
        paths.read_token()
    assert raised.value.status == EXIT_NO_CHANNEL


def test_the_environment_selects_the_endpoint(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("ROUNDTABLE_CAPABILITY_URL", "https://sup.example:8443")
    monkeypatch.setenv("ROUNDTABLE_CA_FILE", str(tmp_path / "ca.crt"))
    paths = ChannelPaths(tmp_path / "mcp.sock", tmp_path / "token")
    assert paths.endpoint == ("sup.example", 8443) and paths.ca_file == tmp_path / "ca.crt"
    assert paths.base_url() == "https://sup.example:8443"
    monkeypatch.delenv("ROUNDTABLE_CAPABILITY_URL")
    assert ChannelPaths(tmp_path / "mcp.sock", tmp_path / "token").endpoint is None


async def _serve_once(tmp_path: Path, answer: bytes | None) -> HttpError | bytes:
    """POST to a TLS server on loopback that answers ``answer`` and drops the TCP connection without
    ``close_notify`` (``None``: drops it before the handshake); the client's error or body."""
    ca_key, ca_cert = _ca(tmp_path, "ca")
    key, cert = _server_cert(tmp_path, ca_key, ca_cert)
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.load_cert_chain(cert, key)

    async def handle(stream: anyio.abc.SocketStream) -> None:
        if answer is not None:
            tls = await TLSStream.wrap(stream, server_side=True, ssl_context=server)
            await tls.receive()
            await tls.send(answer)
        await stream.aclose()  # the TCP connection only: no close_notify

    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    port = listener.extra(anyio.abc.SocketAttribute.local_port)  # noqa: S610 (anyio, not Django)
    context = ssl.create_default_context(cafile=str(ca_cert))
    found: HttpError | bytes = b""
    async with listener, anyio.create_task_group() as group:
        group.start_soon(listener.serve, handle)
        try:
            async with TlsHttpClient("127.0.0.1", port, ssl_context=context, headers={}, timeout=10) as http:
                found = (await http.post("/mcp", b"{}", {})).content
        except HttpError as exc:
            found = exc
        group.cancel_scope.cancel()
    return found


async def test_an_unframed_body_cut_without_close_notify_is_an_error(tmp_path: Path) -> None:
    found = await _serve_once(tmp_path, b'HTTP/1.1 200 OK\r\n\r\n{"result": "trunc')
    assert isinstance(found, HttpError) and "broke" in str(found)


async def test_a_framed_body_needs_no_close_notify(tmp_path: Path) -> None:
    found = await _serve_once(tmp_path, b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")
    assert found == b"{}"


async def test_a_connection_dropped_in_the_handshake_is_an_http_error(tmp_path: Path) -> None:
    found = await _serve_once(tmp_path, None)
    assert isinstance(found, HttpError) and "cannot connect" in str(found)
