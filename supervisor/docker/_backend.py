"""The blocking Docker engine calls Roundtable makes, and which of their failures are worth retrying.

:class:`DockerBackend` is the handful of blocking engine calls the launcher and the reaper need.
:class:`supervisor.docker._engine_api.EngineApiBackend` implements it over the engine's HTTP API on
its Unix socket with the standard library alone (the production default); the docker SDK's
:class:`supervisor.docker._sdk.SdkDockerBackend` implements it for any other ``DOCKER_HOST``;
:mod:`tests.fakes.docker_engine` implements it in memory with injected faults, for tests only.
A backend raises :class:`EngineApiError` (or the SDK's ``docker.errors.APIError``) when the engine
answers with an error status, and a :class:`ConnectionError`/:class:`TimeoutError` (or the
``requests`` equivalents) when it cannot be reached, so the layer above,
:class:`supervisor.docker._client.DockerClient`, treats both backends alike.

This module imports neither ``docker`` nor ``requests``: it recognises their exceptions only when
something else has imported them already (no object of a never-imported class can exist).

:func:`is_transient` tells that layer which of those exceptions a retry may cure: lost connections,
timeouts and the engine's HTTP 500, 502, 503 and 504 answers. :func:`is_connection_failure` singles
out the ones where the engine was never reached at all.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

__all__ = [
    "ContainerSummary",
    "DockerBackend",
    "EngineApiError",
    "error_status",
    "exception_chain",
    "is_connection_failure",
    "is_transient",
]

_TRANSIENT_STATUS = frozenset({500, 502, 503, 504})


class EngineApiError(Exception):
    """The engine answered an error ``status`` with ``explanation`` (its JSON ``message``)."""

    def __init__(self, status: int, explanation: str, *, operation: str = ""):
        super().__init__(f"{status} {operation}: {explanation}" if operation else f"{status}: {explanation}")
        self.status = status
        self.explanation = explanation

    @property
    def image_not_found(self) -> bool:
        """Whether this is a create's 404 for a missing image (not for a missing container)."""
        return self.status == 404 and "no such image" in self.explanation.lower()


@dataclass(frozen=True)
class ContainerSummary:
    """One container as listed by the engine."""

    id: str
    name: str
    labels: Mapping[str, str]
    state: str

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> ContainerSummary:
        """One row of the engine's ``GET /containers/json`` answer (both backends read that shape)."""
        return cls(
            id=str(row["Id"]),
            name=str((row.get("Names") or ["?"])[0]).lstrip("/"),
            labels=dict(row.get("Labels") or {}),
            state=str(row.get("State") or ""),
        )


class DockerBackend(Protocol):
    """The blocking engine calls Roundtable makes; an error answer raises :class:`EngineApiError`."""

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


# -- failure classification ---------------------------------------------------------------------------


def _sdk_api_error() -> type[BaseException] | None:
    errors = sys.modules.get("docker.errors")
    return None if errors is None else errors.APIError


def _requests_errors() -> tuple[type[BaseException], ...]:
    exceptions = sys.modules.get("requests.exceptions")
    return () if exceptions is None else (exceptions.ConnectionError, exceptions.Timeout)


def error_status(exc: BaseException) -> int | None:
    """The engine's HTTP status ``exc`` carries (either backend's error type), else None."""
    if isinstance(exc, EngineApiError):
        return exc.status
    sdk_error = _sdk_api_error()
    if sdk_error is not None and isinstance(exc, sdk_error):
        code = getattr(exc, "status_code", None)
        return int(code) if code is not None else None
    return None


def _is_api_error(exc: BaseException) -> bool:
    sdk_error = _sdk_api_error()
    return isinstance(exc, EngineApiError) or (sdk_error is not None and isinstance(exc, sdk_error))


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
        # The SDK's APIError subclasses requests' HTTPError: look at its status before anything else.
        if _is_api_error(link):
            return error_status(link) in _TRANSIENT_STATUS
        if isinstance(link, (ConnectionError, TimeoutError, *_requests_errors())):
            return True
    return False


def is_connection_failure(exc: BaseException) -> bool:
    """Whether ``exc`` is transient and the engine never answered (no HTTP status anywhere in its chain)."""
    return not any(_is_api_error(link) for link in exception_chain(exc)) and is_transient(exc)
