"""A :class:`~supervisor.docker._backend.DockerBackend` over the engine's HTTP API on its Unix socket.

:class:`EngineApiBackend` speaks the Docker Engine API with the standard library alone
(:mod:`http.client` over an ``AF_UNIX`` socket, JSON bodies), so a cold launch never imports the docker
SDK and ``requests``. Like the SDK's ``version="auto"``, it asks ``GET /version`` once and then
pins every path to the engine's own ``ApiVersion``; constructing it therefore raises when the engine
is down.

Connections: idle keep-alive connections wait in a small pool (one per concurrent caller at most,
:data:`_MAX_IDLE` kept); one is checked for a close by the engine before reuse and dropped after
any failure. A ``wait`` holds its connection for as long as it blocks, with that call's own timeout;
every other call has ``timeout`` seconds. :meth:`EngineApiBackend.close` closes every connection,
idle or not.

Errors: an error answer raises :class:`~supervisor.docker._backend.EngineApiError` (status and the
engine's ``message``); a socket that cannot be reached, a dropped connection or a malformed answer
raises :class:`EngineConnectionError` (a :class:`ConnectionError`), and a timeout
:class:`TimeoutError`. Nothing here logs: request bodies and answers never reach a log.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import select
import socket
import threading
import urllib.parse
from collections.abc import Iterator, Mapping
from typing import Any

from supervisor.docker._backend import ContainerSummary, EngineApiError
from supervisor.docker._engine_create import create_body, demultiplex

__all__ = ["EngineApiBackend", "EngineConnectionError", "engine_address", "unix_socket_path"]

_API_TIMEOUT = 60.0
_MAX_IDLE = 8
_MULTIPLEXED = "application/vnd.docker.multiplexed-stream"


class EngineConnectionError(ConnectionError):
    """The engine could not be reached, or the connection broke before a whole answer came back."""


def engine_address() -> str:
    """The engine's address: ``DOCKER_HOST``, else the default Unix socket."""
    return os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"


def unix_socket_path(address: str) -> str | None:
    """The socket path of a ``unix://`` engine address (``DOCKER_HOST``), else None."""
    if not address.startswith("unix://"):
        return None
    path = address[len("unix://") :]
    return path or None


class _UnixConnection(http.client.HTTPConnection):
    """An HTTP/1.1 connection to ``path``, an ``AF_UNIX`` socket."""

    def __init__(self, path: str, timeout: float):
        super().__init__("localhost", timeout=timeout)
        self._path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(self.timeout)
            sock.connect(self._path)
        except BaseException:
            sock.close()
            raise
        self.sock = sock

    def dropped(self) -> bool:
        """Whether the engine closed this idle connection (it is readable: EOF or stray bytes)."""
        if self.sock is None:
            return True
        try:
            readable, _, _ = select.select([self.sock], [], [], 0)
        except (OSError, ValueError):
            return True
        return bool(readable)

    def abort(self) -> None:
        """Close the connection, waking a thread blocked reading it (``close`` alone would not)."""
        if self.sock is not None:
            with contextlib.suppress(OSError):
                self.sock.shutdown(socket.SHUT_RDWR)
        self.close()

    def set_timeout(self, timeout: float) -> None:
        """The timeout of every socket operation from now on."""
        self.timeout = timeout
        if self.sock is not None:
            self.sock.settimeout(timeout)


def _path(url: str, query: Mapping[str, Any] | None) -> str:
    if not query:
        return url
    return f"{url}?{urllib.parse.urlencode(query)}"


def _message(status: int, body: bytes) -> str:
    try:
        document = json.loads(body)
    except ValueError:
        return body.decode(errors="replace").strip() or http.client.responses.get(status, "")
    if isinstance(document, dict) and "message" in document:
        return str(document["message"])
    return body.decode(errors="replace").strip()


class EngineApiBackend:
    """:class:`~supervisor.docker._backend.DockerBackend` over the Engine API at the Unix socket ``path``.

    Each method does what the protocol method of the same name documents.
    """

    def __init__(self, path: str = "/var/run/docker.sock", *, timeout: float = _API_TIMEOUT):
        self._socket = path
        self._timeout = timeout
        self._lock = threading.Lock()
        self._idle: list[_UnixConnection] = []
        self._busy: set[_UnixConnection] = set()
        self._closed = False
        self._prefix = ""
        version = self._json("GET", "/version")
        self.api_version = str(version.get("ApiVersion") or "")
        if self.api_version:
            self._prefix = f"/v{self.api_version}"

    # -- connections ---------------------------------------------------------------------------------

    def _take(self, timeout: float) -> _UnixConnection:
        with self._lock:
            if self._closed:
                raise EngineConnectionError("the Engine API backend is closed")
            connection = None
            while self._idle:
                candidate = self._idle.pop()
                if not candidate.dropped():
                    connection = candidate
                    break
                candidate.close()
            if connection is None:
                connection = _UnixConnection(self._socket, timeout)
            self._busy.add(connection)
        connection.set_timeout(timeout)
        return connection

    def _give_back(self, connection: _UnixConnection, *, reusable: bool) -> None:
        with self._lock:
            self._busy.discard(connection)
            if reusable and not self._closed and len(self._idle) < _MAX_IDLE:
                self._idle.append(connection)
                return
        connection.close()

    def _send(
        self,
        method: str,
        url: str,
        *,
        query: Mapping[str, Any] | None = None,
        body: Any = None,
        timeout: float | None = None,
    ) -> tuple[_UnixConnection, http.client.HTTPResponse]:
        """Send one request; the caller reads the answer and gives the connection back."""
        connection = self._take(self._timeout if timeout is None else timeout)
        headers = {"Host": "docker"}
        payload = None
        if body is not None:
            payload = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        with self._dropped_on_failure(connection, f"{method} {url}"):
            connection.request(method, self._prefix + _path(url, query), body=payload, headers=headers)
            response = connection.getresponse()
        return connection, response

    @contextlib.contextmanager
    def _dropped_on_failure(self, connection: _UnixConnection, what: str) -> Iterator[None]:
        """Close ``connection`` (never reused) if the block fails; a transport failure other than a
        timeout becomes :class:`EngineConnectionError`."""
        try:
            yield
        except TimeoutError:
            self._give_back(connection, reusable=False)
            raise
        except (OSError, http.client.HTTPException) as exc:
            self._give_back(connection, reusable=False)
            raise EngineConnectionError(f"{what}: {exc or type(exc).__name__}") from exc
        except BaseException:
            self._give_back(connection, reusable=False)
            raise

    def _read(self, connection: _UnixConnection, response: http.client.HTTPResponse, what: str) -> bytes:
        """The whole answer; its connection goes back to the pool, or is closed after a failure."""
        with self._dropped_on_failure(connection, what):
            data = response.read()
        self._give_back(connection, reusable=not response.will_close)
        if response.status >= 400:
            raise EngineApiError(response.status, _message(response.status, data), operation=what)
        return data

    def _call(
        self,
        method: str,
        url: str,
        *,
        query: Mapping[str, Any] | None = None,
        body: Any = None,
        timeout: float | None = None,
    ) -> bytes:
        connection, response = self._send(method, url, query=query, body=body, timeout=timeout)
        return self._read(connection, response, f"{method} {url}")

    def _json(self, method: str, url: str, **options: Any) -> Any:
        data = self._call(method, url, **options)
        try:
            return json.loads(data) if data else None
        except ValueError as exc:
            raise EngineConnectionError(f"{method} {url}: the engine's answer is not JSON") from exc

    # -- the protocol --------------------------------------------------------------------------------

    def ping(self) -> None:
        self._call("GET", "/_ping")

    def engine_id(self) -> str:
        info = self._json("GET", "/info") or {}
        return str(info.get("ID") or info.get("Name") or "")

    def create(self, kwargs: Mapping[str, Any]) -> str:
        name, body = create_body(kwargs)
        created = self._json("POST", "/containers/create", query={"name": name} if name else None, body=body)
        return str(created["Id"])

    def start(self, container: str) -> None:
        self._call("POST", f"/containers/{_quote(container)}/start")

    def wait(self, container: str, timeout: float) -> int | None:
        try:
            result = self._json("POST", f"/containers/{_quote(container)}/wait", timeout=max(timeout, 0.001))
        except TimeoutError:
            return None
        return int(result["StatusCode"])

    def kill(self, container: str) -> None:
        self._call("POST", f"/containers/{_quote(container)}/kill")

    def inspect(self, container: str) -> dict[str, Any]:
        return dict(self._json("GET", f"/containers/{_quote(container)}/json"))

    def logs(self, container: str, *, tail_lines: int) -> Iterator[bytes]:
        url = f"/containers/{_quote(container)}/logs"
        connection, response = self._send(
            "GET", url, query={"stdout": 1, "stderr": 1, "follow": 0, "tail": tail_lines}
        )
        if response.status >= 400:
            self._read(connection, response, f"GET {url}")  # raises EngineApiError
        multiplexed = self._multiplexed(container, response)
        reusable = False
        try:
            if multiplexed:
                yield from demultiplex(response.read)
            else:
                while chunk := response.read(65536):
                    yield chunk
            reusable = not response.will_close
        except (OSError, http.client.HTTPException) as exc:
            raise EngineConnectionError(f"GET {url}: {exc or type(exc).__name__}") from exc
        finally:
            self._give_back(connection, reusable=reusable)

    def _multiplexed(self, container: str, response: http.client.HTTPResponse) -> bool:
        """Whether a log answer is framed: API 1.42+ says so in its type; before, no TTY means framed."""
        content_type = response.getheader("Content-Type", "")
        if content_type.startswith(_MULTIPLEXED):
            return True
        if _newer_or_equal(self.api_version, (1, 42)):
            return False
        # The answer stays unread meanwhile: the inspect takes another connection.
        return not bool((self.inspect(container).get("Config") or {}).get("Tty"))

    def remove(self, container: str) -> None:
        self._call("DELETE", f"/containers/{_quote(container)}", query={"force": 1, "v": 1})

    def update_cpu_shares(self, container: str, shares: int) -> None:
        self._call("POST", f"/containers/{_quote(container)}/update", body={"CpuShares": shares})

    def list_labelled(self, label: str) -> list[ContainerSummary]:
        rows = self._json(
            "GET", "/containers/json", query={"all": 1, "filters": json.dumps({"label": [label]})}
        )
        return [ContainerSummary.from_row(row) for row in rows or []]

    def close(self) -> None:
        with self._lock:
            self._closed = True
            connections = [*self._idle, *self._busy]
            self._idle.clear()
            self._busy.clear()
        for connection in connections:
            connection.abort()


def _quote(container: str) -> str:
    return urllib.parse.quote(container, safe="")


def _newer_or_equal(version: str, wanted: tuple[int, int]) -> bool:
    try:
        major, minor = (int(part) for part in version.split(".")[:2])
    except ValueError:
        return False
    return (major, minor) >= wanted
