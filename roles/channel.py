"""The launch channel as a role sees it: the supervisor's Unix socket (or its TLS endpoint) and the
grant's token file.

Every program in the role image (the runner, the test reviewer, the MCP bridge for
bring-your-own agents) connects the same way: read the token from the read-only token file, check
that the supervisor accepts it, then speak MCP streamable HTTP over the socket with the token in
the ``Authorization`` header. :func:`open_channel` does exactly that, once, with the SDK's
``mcp.Client`` (the bridge passes any of MCP through); :func:`open_tool_channel` does it with the
lean client of :mod:`roles._mcp_http` over :mod:`roles._unix_http` (tools only, about a second
less to import), for the runner and the test reviewer, and lists the tools as its first request.

A role pod on a cluster has no socket: ``ROUNDTABLE_CAPABILITY_URL`` (``https://host:port``) names the
supervisor's capability endpoint and ``ROUNDTABLE_CA_FILE`` the PEM file of the CA its certificate
must chain to (else the system's). The same requests then go over TLS to that endpoint, the token in
the same header; a plain ``http://`` URL is refused, so a token never crosses a network in clear.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import ssl

    import httpx2
    from mcp import Client

    from roles._mcp_http import McpHttpClient, Tool
    from roles._unix_http import UnixHttpClient

__all__ = [
    "DEFAULT_CHANNEL_DIR",
    "EXIT_NO_CHANNEL",
    "EXIT_NO_GRANT",
    "Channel",
    "ChannelError",
    "ChannelPaths",
    "ToolChannel",
    "http_client",
    "open_channel",
    "open_tool_channel",
]

EXIT_NO_CHANNEL = 2
EXIT_NO_GRANT = 3
DEFAULT_CHANNEL_DIR = Path("/run/roundtable")


def _env(name: str) -> str | None:
    return os.environ.get(name) or None


class ChannelError(Exception):
    """The channel is missing or refused: ``status`` is the exit status the program should end with."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class ChannelPaths:
    """Where the socket (or the endpoint, ``url``, and its CA file) and the token file are."""

    socket: Path
    token_file: Path
    url: str | None = field(default_factory=lambda: _env("ROUNDTABLE_CAPABILITY_URL"))
    ca_file: Path | None = field(
        default_factory=lambda: Path(ca) if (ca := _env("ROUNDTABLE_CA_FILE")) else None
    )

    @property
    def endpoint(self) -> tuple[str, int] | None:
        """The endpoint's host and port (None: the socket), or :class:`ChannelError` for a URL that
        is not ``https://host[:port]``."""
        if self.url is None:
            return None
        from urllib.parse import urlsplit

        try:
            parts = urlsplit(self.url)
            host, port = parts.hostname, parts.port or 443
            usable = parts.scheme == "https" and bool(host) and parts.path.rstrip("/") in ("", "/mcp")
        except ValueError:
            usable = False
        if not usable or host is None:
            raise ChannelError(
                EXIT_NO_CHANNEL, f"no launch channel: {self.url!r} is not an https://host:port endpoint"
            )
        return host, port

    def ssl_context(self) -> ssl.SSLContext:
        """Certificate and host-name checks against the CA file (the system's CAs without one)."""
        import ssl  # only a TLS channel's: a tenth of the runner's imports in the container

        try:
            return ssl.create_default_context(cafile=None if self.ca_file is None else str(self.ca_file))
        except (OSError, ssl.SSLError) as exc:
            raise ChannelError(
                EXIT_NO_CHANNEL, f"no launch channel: cannot load {self.ca_file}: {exc}"
            ) from None

    def base_url(self) -> str:
        """The base URL requests go to (``http://localhost`` on the socket)."""
        endpoint = self.endpoint
        if endpoint is None:
            return "http://localhost"
        host = f"[{endpoint[0]}]" if ":" in endpoint[0] else endpoint[0]
        return f"https://{host}:{endpoint[1]}"

    @classmethod
    def from_environment(cls) -> ChannelPaths:
        """From ``ROUNDTABLE_MCP_SOCKET`` and ``ROUNDTABLE_TOKEN_FILE``, else ``ROUNDTABLE_CHANNEL_DIR``."""
        channel = Path(os.environ.get("ROUNDTABLE_CHANNEL_DIR", str(DEFAULT_CHANNEL_DIR)))
        return cls(
            Path(os.environ.get("ROUNDTABLE_MCP_SOCKET", str(channel / "mcp.sock"))),
            Path(os.environ.get("ROUNDTABLE_TOKEN_FILE", str(channel / "token"))),
        )

    def read_token(self) -> str:
        """The grant's token, or :class:`ChannelError` (no socket: no channel; no token: no grant)."""
        if self.endpoint is None and not self.socket.exists():
            raise ChannelError(EXIT_NO_CHANNEL, f"no launch channel: {self.socket} does not exist")
        try:
            token = self.token_file.read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise ChannelError(
                EXIT_NO_GRANT, f"no grant: cannot read {self.token_file} ({exc.strerror})"
            ) from None
        if not token:
            raise ChannelError(EXIT_NO_GRANT, f"no grant: {self.token_file} is empty")
        return token


@dataclass(frozen=True)
class Channel:
    """An open channel: the MCP client and the HTTP client under it (the model gateway uses it too)."""

    client: Client
    http: httpx2.AsyncClient


@dataclass(frozen=True)
class ToolChannel:
    """An open channel with the lean client: the tools it listed and the client."""

    tools: list[Tool]
    client: McpHttpClient


def http_client(paths: ChannelPaths, request_seconds: float = 300) -> httpx2.AsyncClient:
    """An ``httpx2`` client on the launch socket with the grant's token (:class:`ChannelError` first):
    under the SDK's MCP client, and the model gateway's client."""
    import httpx2

    token = paths.read_token()
    if paths.endpoint is None:
        transport = httpx2.AsyncHTTPTransport(uds=str(paths.socket))
    else:
        transport = httpx2.AsyncHTTPTransport(verify=paths.ssl_context())
    headers = {"Authorization": f"Bearer {token}"}
    return httpx2.AsyncClient(
        transport=transport, base_url=paths.base_url(), headers=headers, timeout=request_seconds
    )


def _lean_http(
    paths: ChannelPaths, headers: dict[str, str], timeout: float, *, blocking: bool = False
) -> UnixHttpClient:
    from roles._unix_http import TlsHttpClient, UnixHttpClient

    endpoint = paths.endpoint
    if endpoint is None and blocking:
        from roles._blocking import BlockingUnixHttpClient

        return BlockingUnixHttpClient(paths.socket, headers=headers, timeout=timeout)
    if endpoint is None:
        return UnixHttpClient(paths.socket, headers=headers, timeout=timeout)
    host, port = endpoint
    return TlsHttpClient(host, port, ssl_context=paths.ssl_context(), headers=headers, timeout=timeout)


@asynccontextmanager
async def open_tool_channel(
    paths: ChannelPaths, *, client_version: str = "0", request_seconds: float = 300, blocking: bool = False
) -> AsyncIterator[ToolChannel]:
    """Connect with the lean client and list the tools; :class:`ChannelError` if the token is refused.
    ``blocking``: on a socket, with blocking I/O and no event loop (:mod:`roles._blocking`)."""
    from roles._mcp_http import McpHttpClient, Unauthorized

    token = paths.read_token()
    headers = {"Authorization": f"Bearer {token}"}
    async with _lean_http(paths, headers, request_seconds, blocking=blocking) as http:
        client = McpHttpClient(http, client_version=client_version)
        try:
            tools = await client.list_tools()
        except Unauthorized:
            raise ChannelError(
                EXIT_NO_GRANT, "no grant: the supervisor refused this launch's token"
            ) from None
        yield ToolChannel(tools, client)


@asynccontextmanager
async def open_channel(paths: ChannelPaths, *, request_seconds: float = 300) -> AsyncIterator[Channel]:
    """Connect to the launch's MCP server as its grant; :class:`ChannelError` if it refuses the token."""
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp_types import LATEST_PROTOCOL_VERSION

    async with http_client(paths, request_seconds) as http:
        # At the protocol revision the SDK client speaks, so the launch socket answers it itself.
        probe = await http.post("/mcp", json={}, headers={"MCP-Protocol-Version": LATEST_PROTOCOL_VERSION})
        if probe.status_code == 401:
            raise ChannelError(EXIT_NO_GRANT, "no grant: the supervisor refused this launch's token")
        client: Any = Client(streamable_http_client(f"{paths.base_url()}/mcp", http_client=http))
        async with client:
            yield Channel(client, http)
