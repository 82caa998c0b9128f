"""The docker SDK's :class:`~supervisor.docker._backend.DockerBackend`, for engines not on a local socket.

:class:`SdkDockerBackend` is what :func:`supervisor.docker._client.default_backend` picks when
``DOCKER_HOST`` names a ``tcp://`` (or any other non-``unix://``) engine; the local engine goes
through the lean :class:`~supervisor.docker._engine_api.EngineApiBackend`. Importing this module
imports ``docker`` and ``requests`` (some 70 ms), so only that choice, or a test, imports it.
It raises the SDK's own exceptions, which :mod:`supervisor.docker._backend` classifies.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import docker
import requests.exceptions

from supervisor.docker._backend import ContainerSummary

__all__ = ["SdkDockerBackend"]

_API_TIMEOUT = 60.0


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
        return [ContainerSummary.from_row(row) for row in rows]

    def close(self) -> None:
        self._client.close()
