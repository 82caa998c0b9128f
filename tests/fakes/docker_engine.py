"""An in-memory Docker engine with injected faults, for tests of failure paths only.

:class:`FakeDockerBackend` implements :class:`~supervisor.docker_client.DockerBackend` and raises the
same exception types the docker SDK raises (``docker.errors.APIError`` with a real HTTP status,
``requests`` connection errors), so the retrying, translating and clean-up code above it runs exactly
as it would against a real engine. It never replaces the real engine in tests of what a container can
or cannot do: those run real containers.

Faults are queued per operation with :meth:`FakeDockerBackend.fail`; each call of that operation
takes the next one. :class:`AfterEffect` makes the call take effect before it raises (a create whose
answer is lost on the way back). How a started container behaves comes from :class:`Behaviour`: exit
at once with a status (optionally OOM-killed), or run until killed.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import docker.errors
import requests
import requests.exceptions

from supervisor.docker._client import ContainerSummary

__all__ = [
    "AfterEffect",
    "Behaviour",
    "FakeContainer",
    "FakeDockerBackend",
    "api_error",
    "connection_refused",
    "connection_reset",
    "image_not_found",
]


def api_error(status: int, explanation: str) -> docker.errors.APIError:
    """What the SDK raises when the engine answers ``status``."""
    response = requests.Response()
    response.status_code = status
    cls = docker.errors.NotFound if status == 404 else docker.errors.APIError
    return cls(f"{status} Server Error: {explanation}", response=response, explanation=explanation)


def image_not_found(image: str) -> docker.errors.ImageNotFound:
    """The SDK's error for a create whose image does not exist."""
    response = requests.Response()
    response.status_code = 404
    explanation = f"No such image: {image}"
    return docker.errors.ImageNotFound(
        f"404 Client Error: {explanation}", response=response, explanation=explanation
    )


def connection_reset() -> requests.exceptions.ConnectionError:
    """A request whose connection the engine dropped."""
    return requests.exceptions.ConnectionError(ConnectionResetError(104, "Connection reset by peer"))


def connection_refused() -> requests.exceptions.ConnectionError:
    """A request to an engine that is not listening."""
    return requests.exceptions.ConnectionError(FileNotFoundError(2, "No such file or directory"))


@dataclass(frozen=True)
class AfterEffect:
    """A fault raised after the operation took effect (its answer was lost)."""

    error: BaseException


@dataclass(frozen=True)
class Behaviour:
    """What a started container does: exit with ``exit_code`` at once, or run until killed (None)."""

    exit_code: int | None = 0
    oom_killed: bool = False
    output: bytes = b""


@dataclass
class FakeContainer:
    """One container of the fake engine."""

    id: str
    name: str
    kwargs: Mapping[str, Any]
    behaviour: Behaviour
    state: str = "created"
    exit_code: int = 0
    oom_killed: bool = False
    stopped: threading.Event = field(default_factory=threading.Event)

    @property
    def labels(self) -> dict[str, str]:
        """The container's labels."""
        return dict(self.kwargs.get("labels") or {})


class FakeDockerBackend:
    """A fault-injecting in-memory engine; ``calls`` records every operation in order."""

    def __init__(self, behaviour: Behaviour | None = None):
        self.behaviour = behaviour or Behaviour()
        self.containers: dict[str, FakeContainer] = {}
        self.calls: list[str] = []
        self._faults: dict[str, collections.deque[BaseException | AfterEffect]] = collections.defaultdict(
            collections.deque
        )
        self._lock = threading.Lock()
        self._counter = 0

    # -- test controls -------------------------------------------------------------------------------

    def fail(self, operation: str, *faults: BaseException | AfterEffect) -> None:
        """Queue ``faults`` for the next calls of ``operation`` (``create``, ``start``, ``wait``...)."""
        with self._lock:
            self._faults[operation].extend(faults)

    def count(self, operation: str) -> int:
        """How many times ``operation`` was called."""
        return self.calls.count(operation)

    def add_container(self, labels: Mapping[str, str], *, running: bool = True) -> FakeContainer:
        """A container that exists without a launch: what a crashed supervisor leaves behind."""
        with self._lock:
            container = self._new({"name": f"leftover-{self._counter}", "labels": dict(labels)})
            container.behaviour = Behaviour(exit_code=None)
            container.state = "running" if running else "created"
            return container

    # -- the protocol --------------------------------------------------------------------------------

    def _enter(self, operation: str) -> AfterEffect | None:
        with self._lock:
            self.calls.append(operation)
            queue = self._faults[operation]
            fault = queue.popleft() if queue else None
        if fault is None or isinstance(fault, AfterEffect):
            return fault
        raise fault

    def _new(self, kwargs: Mapping[str, Any]) -> FakeContainer:
        self._counter += 1
        container = FakeContainer(
            id=f"{self._counter:064x}",
            name=str(kwargs.get("name") or ""),
            kwargs=kwargs,
            behaviour=self.behaviour,
        )
        self.containers[container.id] = container
        return container

    def _find(self, ref: str) -> FakeContainer:
        with self._lock:
            for container in self.containers.values():
                if ref in (container.id, container.name):
                    return container
        raise api_error(404, f"No such container: {ref}")

    def ping(self) -> None:
        """See :class:`~supervisor.docker_client.DockerBackend`."""
        self._enter("ping")

    def engine_id(self) -> str:
        """See :class:`~supervisor.docker_client.DockerBackend`: one fake engine, one ID."""
        self._enter("engine_id")
        return "FAKE:ENGINE"

    def create(self, kwargs: Mapping[str, Any]) -> str:
        """See :class:`~supervisor.docker_client.DockerBackend`."""
        late = self._enter("create")
        with self._lock:
            name = str(kwargs.get("name") or "")
            if name and any(c.name == name for c in self.containers.values()):
                raise api_error(409, f'Conflict. The container name "/{name}" is already in use')
            container = self._new(dict(kwargs))
        if late is not None:
            raise late.error
        return container.id

    def start(self, container: str) -> None:
        """See :class:`~supervisor.docker_client.DockerBackend`."""
        late = self._enter("start")
        found = self._find(container)
        found.state = "running"
        if found.behaviour.exit_code is not None:
            self._stop(found, found.behaviour.exit_code, oom=found.behaviour.oom_killed)
        if late is not None:
            raise late.error

    def wait(self, container: str, timeout: float) -> int | None:
        """See :class:`~supervisor.docker_client.DockerBackend`."""
        self._enter("wait")
        found = self._find(container)
        if not found.stopped.wait(timeout):
            return None
        return found.exit_code

    def kill(self, container: str) -> None:
        """See :class:`~supervisor.docker_client.DockerBackend`."""
        self._enter("kill")
        found = self._find(container)
        if found.state != "running":
            raise api_error(409, f"Container {container} is not running")
        self._stop(found, 137)

    def inspect(self, container: str) -> dict[str, Any]:
        """See :class:`~supervisor.docker_client.DockerBackend`."""
        self._enter("inspect")
        found = self._find(container)
        return {
            "Id": found.id,
            "Name": f"/{found.name}",
            "Config": {"Labels": found.labels},
            "State": {
                "Status": found.state,
                "Running": found.state == "running",
                "OOMKilled": found.oom_killed,
                "ExitCode": found.exit_code,
            },
        }

    def logs(self, container: str, *, tail_lines: int) -> Iterator[bytes]:
        """See :class:`~supervisor.docker_client.DockerBackend`."""
        self._enter("logs")
        output = self._find(container).behaviour.output
        lines = output.splitlines(keepends=True)[-tail_lines:]
        return iter(lines)

    def remove(self, container: str) -> None:
        """See :class:`~supervisor.docker_client.DockerBackend`."""
        late = self._enter("remove")
        found = self._find(container)
        with self._lock:
            self.containers.pop(found.id, None)
        self._stop(found, 137)
        if late is not None:
            raise late.error

    def update_cpu_shares(self, container: str, shares: int) -> None:
        """See :class:`~supervisor.docker_client.DockerBackend`."""
        late = self._enter("update")
        self._find(container).kwargs = {**self._find(container).kwargs, "cpu_shares": shares}
        if late is not None:
            raise late.error

    def list_labelled(self, label: str) -> list[ContainerSummary]:
        """See :class:`~supervisor.docker_client.DockerBackend`."""
        self._enter("list")
        key, _, value = label.partition("=")
        with self._lock:
            return [
                ContainerSummary(c.id, c.name, c.labels, c.state)
                for c in self.containers.values()
                if key in c.labels and (not value or c.labels[key] == value)
            ]

    def close(self) -> None:
        """See :class:`~supervisor.docker_client.DockerBackend`."""
        self.calls.append("close")

    @staticmethod
    def _stop(container: FakeContainer, exit_code: int, *, oom: bool = False) -> None:
        if container.stopped.is_set():
            return
        container.exit_code, container.oom_killed, container.state = exit_code, oom, "exited"
        container.stopped.set()
