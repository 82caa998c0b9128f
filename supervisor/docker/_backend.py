"""The blocking Docker engine calls Roundtable makes, and which of their failures are worth retrying.

:class:`DockerBackend` is the handful of blocking engine calls the launcher and the reaper need.
:class:`SdkDockerBackend` implements it with the docker SDK; :mod:`tests.fakes.docker_engine` implements
it in memory with injected faults, for tests only. Backends raise the SDK's own exceptions
(``docker.errors.APIError``, ``requests`` connection errors), so the layer above,
:class:`supervisor.docker._client.DockerClient`, is tested against exactly what the SDK raises.

:func:`is_transient` tells that layer which of those exceptions a retry may cure: lost connections,
timeouts and the engine's HTTP 500, 502, 503 and 504 answers. :func:`is_connection_failure` singles
out the ones where the engine was never reached at all.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import docker
import docker.errors
import requests.exceptions

__all__ = [
    "ContainerSummary",
    "DockerBackend",
    "SdkDockerBackend",
    "exception_chain",
    "is_connection_failure",
    "is_transient",
]

_TRANSIENT_STATUS = frozenset({500, 502, 503, 504})
_API_TIMEOUT = 60.0


@dataclass(frozen=True)
class ContainerSummary:
    """One container as listed by the engine."""

    id: str
    name: str
    labels: Mapping[str, str]
    state: str


class DockerBackend(Protocol):
    """The blocking engine calls Roundtable makes; implementations raise the docker SDK's errors."""

    def ping(self) -> None:
        """Raise unless the engine answers."""

    def engine_id(self) -> str:
        """The engine's identity (``docker info``'s ``ID``, else its ``Name``)."""

    def create(self, kwargs: Mapping[str, Any]) -> str:
        """``containers.create(**kwargs)``; return the new container's id."""

    def start(self, container: str) -> None:
        """Start a created container."""

    def wait(self, container: str, timeout: float) -> int | None:
        """Block until the container stops (its exit status) or ``timeout`` passes (None)."""

    def kill(self, container: str) -> None:
        """SIGKILL a running container."""

    def inspect(self, container: str) -> dict[str, Any]:
        """The engine's inspect document of a container (by id or name)."""

    def logs(self, container: str, *, tail_lines: int) -> Iterator[bytes]:
        """Stream the last ``tail_lines`` lines of stdout and stderr as chunks of bytes."""

    def remove(self, container: str) -> None:
        """Force-remove a container (killing it first if it runs)."""

    def update_cpu_shares(self, container: str, shares: int) -> None:
        """Set a running container's CPU weight."""

    def list_labelled(self, label: str) -> list[ContainerSummary]:
        """Every container, running or not, with ``label`` (``key`` or ``key=value``)."""

    def close(self) -> None:
        """Release the connection pool."""


class SdkDockerBackend:
    """:class:`DockerBackend` over the docker SDK (``docker.from_env`` unless a ``base_url`` is given).

    Each method does what the protocol method of the same name documents.
    """

    def __init__(self, base_url: str | None = None, *, timeout: float = _API_TIMEOUT):
        # Constructing the client asks the engine for its API version, so this raises when it is down.
        if base_url is None:
            self._client = docker.from_env(timeout=timeout)
        else:
            self._client = docker.DockerClient(base_url=base_url, timeout=timeout)
        self._api = self._client.api

    def ping(self) -> None:
        self._client.ping()

    def engine_id(self) -> str:
        info = self._client.info()
        return str(info.get("ID") or info.get("Name") or "")

    def create(self, kwargs: Mapping[str, Any]) -> str:
        return str(self._client.containers.create(**kwargs).id)

    def start(self, container: str) -> None:
        self._api.start(container)

    def wait(self, container: str, timeout: float) -> int | None:
        try:
            result = self._api.wait(container, timeout=max(timeout, 0.001))
        except requests.exceptions.ReadTimeout:
            return None
        except requests.exceptions.ConnectionError as exc:
            # urllib3 can report a read timeout wrapped in a connection error.
            if "read timed out" in str(exc).lower():
                return None
            raise
        return int(result["StatusCode"])

    def kill(self, container: str) -> None:
        self._api.kill(container)

    def inspect(self, container: str) -> dict[str, Any]:
        return dict(self._api.inspect_container(container))

    def logs(self, container: str, *, tail_lines: int) -> Iterator[bytes]:
        # Not streamed: on an error answer (a container removed from outside, say) the SDK raises
        # before handing back a streamed response, which then keeps its socket open. The engine
        # caps a role's log file at 1 MB (LOG_CONFIG), so the whole tail fits in memory.
        data = self._api.logs(
            container, stdout=True, stderr=True, stream=False, follow=False, tail=tail_lines
        )
        yield data if isinstance(data, bytes) else str(data).encode()

    def remove(self, container: str) -> None:
        self._api.remove_container(container, force=True, v=True)

    def update_cpu_shares(self, container: str, shares: int) -> None:
        self._api.update_container(container, cpu_shares=shares)

    def list_labelled(self, label: str) -> list[ContainerSummary]:
        rows = self._api.containers(all=True, filters={"label": label})
        return [
            ContainerSummary(
                id=str(row["Id"]),
                name=str((row.get("Names") or ["?"])[0]).lstrip("/"),
                labels=dict(row.get("Labels") or {}),
                state=str(row.get("State") or ""),
            )
            for row in rows
        ]

    def close(self) -> None:
        self._client.close()


# -- failure classification ---------------------------------------------------------------------------


def exception_chain(exc: BaseException) -> Iterator[BaseException]:
    """``exc``, then what caused it (``__cause__``, else ``__context__``), and so on, each once."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def is_transient(exc: BaseException) -> bool:
    """Whether retrying ``exc`` may succeed: lost connections, timeouts, 5xx answers of the engine."""
    for link in exception_chain(exc):
        # APIError subclasses requests' HTTPError: look at its status before anything else.
        if isinstance(link, docker.errors.APIError):
            return link.status_code in _TRANSIENT_STATUS
        if isinstance(
            link,
            requests.exceptions.ConnectionError
            | requests.exceptions.Timeout
            | ConnectionError
            | TimeoutError,
        ):
            return True
    return False


def is_connection_failure(exc: BaseException) -> bool:
    """Whether ``exc`` is transient and the engine never answered (no HTTP status anywhere in its chain)."""
    return not any(
        isinstance(link, docker.errors.APIError) for link in exception_chain(exc)
    ) and is_transient(exc)
