"""Where a server listens: binding a TCP port or a Unix socket (its mode set before ``listen``), and
the loopback names a client may send as ``Host``/``Origin``.

Shared by the uvicorn-served apps (:mod:`capabilities.serving._transports`) and the lean launch
socket server (:mod:`capabilities.serving._lean_http`), which must not import uvicorn or the MCP SDK
to bind its socket.
"""

from __future__ import annotations

import contextlib
import os
import socket
import ssl
import stat
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from store.errors import Conflict, InvalidArgument

__all__ = ["MAX_UDS_PATH_BYTES", "BoundAddress", "Listener", "allowed_hosts_and_origins", "listen"]

MAX_UDS_PATH_BYTES = 107
"""``sun_path`` holds 108 bytes on Linux, one of them the terminating NUL."""

_LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")


def allowed_hosts_and_origins(extra_hosts: Sequence[str] = ()) -> tuple[list[str], list[str]]:
    """The ``Host`` values and ``Origin`` values DNS-rebinding protection admits (``name:*``: any port).

    Loopback names, with or without a port (``localhost`` without one is what a client on a Unix
    socket sends); ``extra_hosts`` adds the names a remote bind is reached by.
    """
    hosts = [*_LOOPBACK_NAMES, *(f"{name}:*" for name in _LOOPBACK_NAMES), *extra_hosts]
    origins = [f"{s}://{n}{p}" for s in ("http", "https") for n in _LOOPBACK_NAMES for p in ("", ":*")]
    return hosts, origins


@dataclass(frozen=True)
class BoundAddress:
    """Where a server listens: a TCP host and port, or a Unix socket path."""

    host: str | None = None
    port: int | None = None
    uds: str | None = None
    tls: bool = False

    @property
    def base_url(self) -> str:
        """The base URL a client uses: ``https://`` with TLS, ``http://localhost`` on a Unix socket."""
        if self.uds is not None:
            return "http://localhost"
        assert self.host is not None
        assert self.port is not None
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{'https' if self.tls else 'http'}://{host}:{self.port}"

    @property
    def mcp_url(self) -> str:
        """The MCP endpoint."""
        return f"{self.base_url}/mcp"


def _bind_tcp(host: str, port: int) -> tuple[socket.socket, BoundAddress]:
    if not 0 <= port <= 65535:
        raise InvalidArgument("port must lie between 0 and 65535")
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    except socket.gaierror as exc:
        raise InvalidArgument(f"cannot resolve {host!r}: {exc.strerror}") from None
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
        sock.setblocking(False)
    except OSError as exc:
        sock.close()
        raise Conflict(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    bound = sock.getsockname()
    return sock, BoundAddress(host=str(bound[0]), port=int(bound[1]))


def _bind_unix(path: str, mode: int) -> tuple[socket.socket, BoundAddress]:
    if len(os.fsencode(path)) > MAX_UDS_PATH_BYTES:
        raise InvalidArgument(f"socket path is longer than {MAX_UDS_PATH_BYTES} bytes: {path}")
    with contextlib.suppress(FileNotFoundError):
        info = os.lstat(path)
        if not stat.S_ISSOCK(info.st_mode):
            raise Conflict(f"{path} exists and is not a socket; refusing to replace it")
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            probe.connect(path)
        except OSError:
            os.unlink(path)  # a stale socket left by a dead server
        else:
            raise Conflict(f"another server is listening on {path}")
        finally:
            probe.close()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(path)
        # Before listen(): until then nobody can connect, whatever the umask gave the file.
        os.chmod(path, mode)
        sock.listen(128)
        sock.setblocking(False)
    except OSError as exc:
        sock.close()
        raise Conflict(f"cannot listen on {path}: {exc.strerror}") from None
    return sock, BoundAddress(uds=path)


@dataclass
class Listener:
    """A bound, listening socket; closing it removes its Unix socket path if still its own."""

    sock: socket.socket
    address: BoundAddress
    ident: tuple[int, int] | None = None
    tls: ssl.SSLContext | None = None

    def close(self) -> None:
        """Close the socket and remove its Unix socket path if it is still this socket's."""
        self.sock.close()
        path = self.address.uds
        if path is not None and self.ident is not None and _ident(path) == self.ident:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)


def _ident(path: str) -> tuple[int, int] | None:
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    return info.st_dev, info.st_ino


def listen(
    host: str | None, port: int, uds: str | Path | None, uds_mode: int, tls: ssl.SSLContext | None = None
) -> Listener:
    """Bind and listen on TCP ``host:port`` or on Unix socket ``uds`` (mode ``uds_mode``, set before
    ``listen``; a stale socket left by a dead server is replaced, a live one is a conflict)."""
    if (host is None) == (uds is None):
        raise InvalidArgument("serve on either a TCP host or a Unix socket path")
    if uds is not None and tls is not None:
        raise InvalidArgument("TLS is served on TCP only; a Unix socket never leaves this machine")
    if uds is not None:
        sock, address = _bind_unix(str(uds), uds_mode)
        return Listener(sock, address, _ident(str(uds)))
    assert host is not None
    sock, address = _bind_tcp(host, port)
    return Listener(sock, replace(address, tls=tls is not None), tls=tls)
