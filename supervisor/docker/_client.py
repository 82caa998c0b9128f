"""The Docker engine behind a small async interface: worker threads, bounded retries, our errors.

:class:`DockerClient` wraps a blocking :class:`~supervisor.docker._backend.DockerBackend`: by default
the one :func:`default_backend` picks (the lean :class:`~supervisor.docker._engine_api.EngineApiBackend`
for a local ``unix://`` engine, the docker SDK's :class:`~supervisor.docker._sdk.SdkDockerBackend`
for any other ``DOCKER_HOST``), :mod:`tests.fakes.docker_engine` in tests. It runs every backend call
in a worker thread behind an :class:`anyio.CapacityLimiter`, retries transient failures with tenacity (bounded
attempts, jittered exponential waits, see :class:`RetryPolicy`), and translates whatever is left at
this boundary:

======================================================  ==========================================
failure                                                 outcome
======================================================  ==========================================
connection refused/reset, socket missing, timeouts      retried; then :class:`DockerUnavailable`
HTTP 500, 502, 503, 504 from the engine                 retried; then :class:`LaunchFailed`
HTTP 404 image not found, 400, 409 and other 4xx        not retried: :class:`LaunchFailed`
any other ``docker.errors``/``requests``/``OSError``    not retried: :class:`DockerUnavailable`
anything else a backend raises                          not retried: :class:`LaunchFailed`
======================================================  ==========================================

Both backends' errors translate alike: an HTTP status comes from
:class:`~supervisor.docker._backend.EngineApiError` or the SDK's ``APIError``
(:func:`~supervisor.docker._backend.error_status`). This module imports ``docker`` and ``requests``
only when the SDK backend is chosen. Every translated error is chained to the original
(``raise ... from``).

``wait`` is not retried blindly: it waits until the container stops or the deadline passes, resuming
after a transient error with whatever time remains. Blocking waits use their own limiter, so long
waits never starve the short calls.

The backend names (:class:`ContainerSummary`, :class:`DockerBackend`, :func:`is_transient`) live in
:mod:`supervisor.docker._backend` and are re-exported from here.
"""

from __future__ import annotations

import socket
import sys
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar

import anyio
import anyio.to_thread
import structlog
from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception,
    stop_after_attempt,
    wait_random_exponential,
)

from store.errors import DockerUnavailable, LaunchFailed, RoundtableError
from supervisor.docker._backend import (
    ContainerSummary,
    DockerBackend,
    error_status,
    exception_chain,
    is_connection_failure,
    is_transient,
)
from supervisor.docker._engine_api import EngineApiBackend, engine_address, unix_socket_path

__all__ = [
    "ContainerSummary",
    "DockerBackend",
    "DockerClient",
    "RetryPolicy",
    "default_backend",
    "is_transient",
]

_T = TypeVar("_T")
_log = structlog.get_logger("roundtable.docker")


@dataclass(frozen=True)
class RetryPolicy:
    """How transient engine failures are retried: ``attempts`` in all, waits jittered and doubling."""

    attempts: int = 4
    initial_wait: float = 0.2
    max_wait: float = 2.0


def _is_gone(exc: BaseException) -> bool:
    return error_status(exc) == 404


def _explain(exc: BaseException) -> str:
    if error_status(exc) is not None:
        return str(getattr(exc, "explanation", None) or exc)
    return str(exc) or type(exc).__name__


def _image_not_found(exc: BaseException) -> bool:
    """A create's 404 for a missing image (the SDK raises its ``ImageNotFound`` for exactly that)."""
    return error_status(exc) == 404 and "no such image" in _explain(exc).lower()


def _docker_exception(exc: BaseException) -> bool:
    errors = sys.modules.get("docker.errors")
    return errors is not None and isinstance(exc, errors.DockerException)


def default_backend() -> DockerBackend:
    """The backend for the engine ``DOCKER_HOST`` names: the lean Engine API one for a ``unix://``
    socket (the default), the docker SDK's for any other address (``tcp://``, ``ssh://``...)."""
    path = unix_socket_path(engine_address())
    if path is not None:
        return EngineApiBackend(path)
    from supervisor.docker._sdk import SdkDockerBackend  # imports docker and requests: only here

    return SdkDockerBackend()


def _release_sockets(exc: BaseException) -> None:
    """Close sockets a failed connect left open in the frames of ``exc``'s tracebacks.

    The SDK's Unix-socket connection opens its socket in a local variable and does not close it
    when ``connect`` fails; the socket lives as long as the traceback and then warns. We keep the
    translated error chained to the original, so close such sockets now.
    """
    for link in exception_chain(exc):
        tb = link.__traceback__
        while tb is not None:
            for value in list(tb.tb_frame.f_locals.values()):
                if isinstance(value, socket.socket) and value.fileno() != -1:
                    value.close()
            tb = tb.tb_next


def _translate(exc: BaseException, what: str) -> RoundtableError:
    """Our error for a docker/requests failure of operation ``what``."""
    if isinstance(exc, RoundtableError):
        return exc
    _release_sockets(exc)
    status = error_status(exc)
    details: dict[str, Any] = {"operation": what}
    if status is not None:
        details["status"] = status
    if _image_not_found(exc):
        return LaunchFailed(
            f"{what}: image not found ({_explain(exc)}); build it with `roundtable image build`",
            details=details,
        )
    if status is not None:
        return LaunchFailed(f"{what}: the Docker engine answered {status}: {_explain(exc)}", details=details)
    if is_connection_failure(exc) or _docker_exception(exc) or isinstance(exc, OSError):
        return DockerUnavailable(
            f"cannot reach the Docker engine at {engine_address()} ({what}: {_explain(exc)}); "
            "is it running, and may this user use its socket?",
            details=details,
        )
    return LaunchFailed(f"{what} failed: {_explain(exc)}", details=details)


def _create_or_adopt(backend: DockerBackend, kwargs: Mapping[str, Any]) -> str:
    """Create the container; when its (launch-unique) name exists already, adopt that container.

    A retried create whose first attempt reached the engine but lost its answer finds its own
    container under the same name; adopting it keeps one container per launch.
    """
    try:
        return backend.create(kwargs)
    except Exception as exc:
        name = kwargs.get("name")
        if error_status(exc) != 409 or not name:
            raise
        existing = backend.inspect(str(name))
        labels = (existing.get("Config") or {}).get("Labels") or {}
        wanted = dict(kwargs.get("labels") or {})  # the image may add labels of its own
        if not wanted or any(labels.get(key) != value for key, value in wanted.items()):
            raise
        return str(existing["Id"])


def _collect_tail(chunks: Iterable[bytes], max_bytes: int) -> bytes:
    """The last ``max_bytes`` bytes of a stream, in bounded memory."""
    buffer = bytearray()
    for chunk in chunks:
        buffer += chunk
        if len(buffer) > 2 * max_bytes:
            del buffer[:-max_bytes]
    return bytes(buffer[-max_bytes:])


class DockerClient:
    """Async access to one Docker engine; every method may raise only :class:`RoundtableError`."""

    def __init__(
        self,
        backend_factory: Callable[[], DockerBackend] = default_backend,
        *,
        retry: RetryPolicy | None = None,
        max_threads: int = 4,
        max_waits: int = 64,
    ):
        self._factory = backend_factory
        self._backend: DockerBackend | None = None
        self._backend_lock = threading.Lock()
        self.retry = retry or RetryPolicy()
        self._limiter = anyio.CapacityLimiter(max_threads)
        self._wait_limiter = anyio.CapacityLimiter(max_waits)

    # -- plumbing ------------------------------------------------------------------------------------

    def _connected(self) -> DockerBackend:
        """The backend, created on first use (in a worker thread: creating it talks to the engine)."""
        with self._backend_lock:
            if self._backend is None:
                self._backend = self._factory()
            return self._backend

    async def _thread(self, fn: Callable[[DockerBackend], _T], *, waiting: bool = False) -> _T:
        def call() -> _T:
            return fn(self._connected())

        # A blocked wait is abandoned on cancellation (the caller then kills the container, which
        # ends the wait); every other call is short and finishes before the cancellation lands.
        return await anyio.to_thread.run_sync(
            call, limiter=self._wait_limiter if waiting else self._limiter, abandon_on_cancel=waiting
        )

    def _retrying(self, what: str) -> AsyncRetrying:
        def log_retry(state: RetryCallState) -> None:
            outcome = state.outcome
            error = outcome.exception() if outcome is not None else None
            if error is not None:
                _release_sockets(error)
            _log.warning("docker_retry", operation=what, attempt=state.attempt_number, error=str(error))

        return AsyncRetrying(
            retry=retry_if_exception(is_transient),
            stop=stop_after_attempt(self.retry.attempts),
            wait=wait_random_exponential(multiplier=self.retry.initial_wait, max=self.retry.max_wait),
            sleep=anyio.sleep,
            before_sleep=log_retry,
            reraise=True,
        )

    async def _call(self, what: str, fn: Callable[[DockerBackend], _T]) -> _T:
        try:
            async for attempt in self._retrying(what):
                with attempt:
                    return await self._thread(fn)
        except Exception as exc:
            raise _translate(exc, what) from exc
        raise AssertionError("unreachable: tenacity neither returned nor raised")  # pragma: no cover

    # -- operations ----------------------------------------------------------------------------------

    async def ping(self) -> None:
        """Succeed when the engine answers; :class:`DockerUnavailable` otherwise."""
        await self._call("ping", lambda backend: backend.ping())

    async def engine_id(self) -> str:
        """The engine's identity (``docker info`` ID): which engine a supervisor's containers run on."""
        return await self._call("reading the engine's identity", lambda backend: backend.engine_id())

    async def create(self, kwargs: Mapping[str, Any]) -> str:
        """Create a container (idempotent per container name); return its id."""
        return await self._call(
            f"creating container {kwargs.get('name', '')}", lambda backend: _create_or_adopt(backend, kwargs)
        )

    async def start(self, container: str) -> None:
        """Start a created container."""
        await self._call(f"starting container {container[:12]}", lambda backend: backend.start(container))

    async def wait(self, container: str, seconds: float) -> int | None:
        """The container's exit status, or None when it still runs ``seconds`` from now."""
        deadline = anyio.current_time() + seconds
        what = f"waiting for container {container[:12]}"
        try:
            async for attempt in self._retrying(what):
                with attempt:
                    while True:
                        remaining = deadline - anyio.current_time()
                        if remaining <= 0:
                            return None
                        status = await self._thread(partial(_wait, container, remaining), waiting=True)
                        if status is not None:
                            return status
        except Exception as exc:
            raise _translate(exc, what) from exc
        raise AssertionError("unreachable: tenacity neither returned nor raised")  # pragma: no cover

    async def kill(self, container: str) -> None:
        """SIGKILL the container; a container that is gone or already stopped is fine."""

        def kill(backend: DockerBackend) -> None:
            try:
                backend.kill(container)
            except Exception as exc:
                if error_status(exc) not in (404, 409):  # 404: gone; 409: is not running
                    raise

        await self._call(f"killing container {container[:12]}", kill)

    async def inspect(self, container: str) -> dict[str, Any]:
        """The engine's inspect document of a container."""
        return await self._call(f"inspecting container {container[:12]}", lambda b: b.inspect(container))

    async def logs(self, container: str, *, max_bytes: int, tail_lines: int) -> bytes:
        """At most the last ``max_bytes`` bytes of the container's last ``tail_lines`` log lines."""
        return await self._call(
            f"reading the logs of container {container[:12]}",
            lambda b: _collect_tail(b.logs(container, tail_lines=tail_lines), max_bytes),
        )

    async def remove(self, container: str) -> bool:
        """Force-remove a container by id or name; False when there was none."""

        def remove(backend: DockerBackend) -> bool:
            try:
                backend.remove(container)
            except Exception as exc:
                if _is_gone(exc):
                    return False
                if error_status(exc) == 409 and "in progress" in _explain(exc).lower():
                    return True  # another remove of the same container is under way
                raise
            return True

        return await self._call(f"removing container {container[:12]}", remove)

    async def update_cpu_shares(self, container: str, shares: int) -> None:
        """Set a running container's CPU weight (``docker update --cpu-shares``)."""
        await self._call(
            f"updating container {container[:12]}", lambda b: b.update_cpu_shares(container, shares)
        )

    async def list_labelled(self, label: str) -> list[ContainerSummary]:
        """Every container carrying ``label`` (``key`` or ``key=value``)."""
        return await self._call(f"listing containers labelled {label}", lambda b: b.list_labelled(label))

    async def aclose(self) -> None:
        """Close the backend's connections (not retried: there is nothing left to close after a failure)."""
        backend, self._backend = self._backend, None
        if backend is not None:
            try:
                await anyio.to_thread.run_sync(backend.close, limiter=self._limiter)
            except Exception as exc:
                raise _translate(exc, "closing the engine connection") from exc


def _wait(container: str, timeout: float, backend: DockerBackend) -> int | None:
    return backend.wait(container, timeout)
