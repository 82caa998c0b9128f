"""The Kubernetes API calls the launcher and the reaper make: worker threads, bounded retries, our errors.

:class:`ClusterApi` wraps the official client (``kubernetes``): each blocking call runs in a worker
thread (``anyio.to_thread``) with a request timeout, and answers come back as plain JSON documents
(the shapes :mod:`supervisor.kubernetes._manifests` builds), not as the client's model objects.

======================================================  ==========================================
failure                                                 outcome
======================================================  ==========================================
connection refused/reset, timeouts, HTTP 429, 5xx       retried (bounded, doubling waits); then
                                                        :class:`~store.errors.LaunchFailed`
HTTP 404 on a read or a delete                          ``None`` / ``False``: it is gone
HTTP 409 on a create                                    :class:`AlreadyExists` (the caller decides)
any other answer                                        :class:`~store.errors.LaunchFailed`, not retried
======================================================  ==========================================

A create is retried too: its name is the launch's, so a create whose answer was lost comes back as
:class:`AlreadyExists` on the retry, and the launcher checks that the object found is its own.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from typing import Any, Literal, TypeVar

import anyio
import anyio.to_thread
import structlog
import urllib3.exceptions
from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt, wait_exponential

from store.errors import LaunchFailed
from supervisor.kubernetes._manifests import SANDBOX_GROUP

__all__ = ["AlreadyExists", "ClusterApi", "Kind", "RetryPolicy", "is_transient"]

Kind = Literal["pod", "secret", "networkpolicy"]
_T = TypeVar("_T")
_WATCH: Any = watch.Watch  # untyped in the client
_TRANSIENT_STATUS = frozenset({429, 500, 502, 503, 504})
_log = structlog.get_logger("roundtable.kubernetes")


class AlreadyExists(LaunchFailed):
    """A create answered 409: an object of that name exists (perhaps from our own lost answer)."""


@dataclass(frozen=True)
class RetryPolicy:
    """``attempts`` in all for a transient failure, waits doubling from ``initial_wait`` to ``max_wait``."""

    attempts: int = 4
    initial_wait: float = 0.1
    max_wait: float = 2.0


def is_transient(exc: BaseException) -> bool:
    """Whether a retry may cure ``exc``: lost connections, timeouts, 429 and 5xx answers."""
    if isinstance(exc, ApiException):
        return exc.status in _TRANSIENT_STATUS or exc.status == 0
    return isinstance(exc, urllib3.exceptions.HTTPError | ConnectionError | TimeoutError | OSError)


def _status(exc: BaseException) -> int | None:
    return exc.status if isinstance(exc, ApiException) else None


def _json(response: Any) -> Any:
    return json.loads(response.data or b"null")


class ClusterApi:
    """The calls of one namespace, each within ``request_seconds``, transient failures retried."""

    def __init__(
        self,
        api_client: client.ApiClient,
        *,
        namespace: str,
        request_seconds: float = 30.0,
        retry: RetryPolicy | None = None,
    ):
        self.api_client = api_client
        self.namespace = namespace
        self.request_seconds = request_seconds
        self.retry = retry or RetryPolicy()
        self.core = client.CoreV1Api(api_client)
        self.networking = client.NetworkingV1Api(api_client)
        self._limiter = anyio.CapacityLimiter(8)

    @property
    def host(self) -> str:
        """The API server's address (for messages)."""
        return str(self.api_client.configuration.host)

    async def aclose(self) -> None:
        """Close the client's connection pool."""
        await anyio.to_thread.run_sync(self.api_client.close)

    async def _call(self, what: str, fn: Callable[[], _T]) -> _T:
        """Run ``fn`` in a worker thread; retry what is transient; translate what is left."""

        def log_retry(state: RetryCallState) -> None:
            _log.info("kubernetes_retry", what=what, attempt=state.attempt_number)

        retrying = AsyncRetrying(
            retry=retry_if_exception(is_transient),
            stop=stop_after_attempt(self.retry.attempts),
            wait=wait_exponential(multiplier=self.retry.initial_wait, max=self.retry.max_wait),
            sleep=anyio.sleep,  # a back-off between attempts, not a wait for a state
            before_sleep=log_retry,
            reraise=True,
        )
        try:
            async for attempt in retrying:
                with attempt:
                    return await anyio.to_thread.run_sync(fn, limiter=self._limiter, abandon_on_cancel=True)
        except AlreadyExists:
            raise
        except ApiException as exc:
            if exc.status == 409:
                raise AlreadyExists(f"{what}: it exists already") from exc
            raise LaunchFailed(f"{what}: the Kubernetes API answered {exc.status} {exc.reason}") from exc
        except Exception as exc:
            reached = f"the Kubernetes API at {self.host} could not be reached"
            raise LaunchFailed(f"{what}: {reached}: {type(exc).__name__}") from exc
        raise AssertionError("unreachable: tenacity neither returned nor raised")  # pragma: no cover

    def _timeout(self) -> float:
        return self.request_seconds

    # -- objects ---------------------------------------------------------------------------------------

    async def create(self, kind: Kind, document: dict[str, Any]) -> dict[str, Any]:
        """Create ``document``; the object as stored (:class:`AlreadyExists` on 409)."""
        ns, t = self.namespace, self._timeout()
        fn: Callable[[], Any]
        if kind == "pod":
            body: Any = client.V1Pod.from_dict(document)
            fn = partial(
                self.core.create_namespaced_pod, ns, body, _preload_content=False, _request_timeout=t
            )
        elif kind == "secret":
            body = client.V1Secret.from_dict(document)
            fn = partial(
                self.core.create_namespaced_secret, ns, body, _preload_content=False, _request_timeout=t
            )
        else:
            body = client.V1NetworkPolicy.from_dict(document)
            fn = partial(
                self.networking.create_namespaced_network_policy,
                ns,
                body,
                _preload_content=False,
                _request_timeout=t,
            )
        name = document["metadata"]["name"]
        return dict(_json(await self._call(f"creating {kind} {name}", fn)))

    async def read(self, kind: Kind, name: str) -> dict[str, Any] | None:
        """The object, or None when there is none."""
        method = {
            "pod": self.core.read_namespaced_pod,
            "secret": self.core.read_namespaced_secret,
            "networkpolicy": self.networking.read_namespaced_network_policy,
        }[kind]
        fn = partial(method, name, self.namespace, _preload_content=False, _request_timeout=self._timeout())
        try:
            return dict(_json(await self._call(f"reading {kind} {name}", fn)))
        except LaunchFailed as exc:
            if _status(exc.__cause__ or exc) == 404:
                return None
            raise

    async def set_owner(
        self, kind: Literal["secret", "networkpolicy"], name: str, owner: dict[str, Any]
    ) -> None:
        """Give the object an owner reference (a merge patch), so the cluster deletes it with its owner."""
        patch = {"metadata": {"ownerReferences": [owner]}}
        method = (
            self.core.patch_namespaced_secret
            if kind == "secret"
            else (self.networking.patch_namespaced_network_policy)
        )
        fn = partial(
            method,
            name,
            self.namespace,
            patch,
            _preload_content=False,
            _request_timeout=self._timeout(),
            _content_type="application/merge-patch+json",
        )
        await self._call(f"setting the owner of {kind} {name}", fn)

    async def delete(self, kind: Kind, name: str, *, uid: str) -> bool:
        """Delete the object (at once: no grace period) if it is still the one of ``uid`` (a
        precondition: one made since under that name stays); False when it was gone already."""
        method = {
            "pod": self.core.delete_namespaced_pod,
            "secret": self.core.delete_namespaced_secret,
            "networkpolicy": self.networking.delete_namespaced_network_policy,
        }[kind]
        fn = partial(
            method,
            name,
            self.namespace,
            body=client.V1DeleteOptions(
                grace_period_seconds=0,
                propagation_policy="Background",
                preconditions=client.V1Preconditions(uid=uid),
            ),
            _preload_content=False,
            _request_timeout=self._timeout(),
        )
        try:
            await self._call(f"deleting {kind} {name}", fn)
        except AlreadyExists:
            raise LaunchFailed(f"deleting {kind} {name}: it is another object now (not uid {uid})") from None
        except LaunchFailed as exc:
            if _status(exc.__cause__ or exc) == 404:
                return False
            raise
        return True

    async def list_labelled(self, kind: Kind, selector: str) -> list[dict[str, Any]]:
        """Every object of ``kind`` in the namespace whose labels match ``selector``."""
        method = {
            "pod": self.core.list_namespaced_pod,
            "secret": self.core.list_namespaced_secret,
            "networkpolicy": self.networking.list_namespaced_network_policy,
        }[kind]
        fn = partial(
            method,
            self.namespace,
            label_selector=selector,
            _preload_content=False,
            _request_timeout=self._timeout(),
        )
        answer = _json(await self._call(f"listing {kind}s", fn))
        return [dict(item) for item in (answer or {}).get("items") or []]

    async def pod_log(self, name: str, *, tail_lines: int, keep_bytes: int) -> bytes:
        """The last ``keep_bytes`` of the last ``tail_lines`` lines of the role container's output.

        Not ``limitBytes``: the API server cuts the *end* off with it, which would keep the start of
        the window, and part of a secret at the cut. The answer is streamed, only its last bytes kept."""
        return await self._call(
            f"reading the log of pod {name}", partial(self._read_log, name, tail_lines, keep_bytes)
        )

    def _read_log(self, name: str, tail_lines: int, keep_bytes: int) -> bytes:
        response: Any = self.core.read_namespaced_pod_log(
            name,
            self.namespace,
            container="role",
            tail_lines=tail_lines,
            _preload_content=False,
            _request_timeout=self._timeout(),
        )
        kept = bytearray()
        try:
            for chunk in response.stream(65536):
                kept += chunk
                del kept[: max(0, len(kept) - keep_bytes)]
        finally:
            response.release_conn()
        return bytes(kept)

    # -- waiting ---------------------------------------------------------------------------------------

    async def wait_pod(
        self, name: str, done: Callable[[dict[str, Any]], bool], seconds: float
    ) -> dict[str, Any] | None:
        """Watch pod ``name`` until ``done(pod)``: that pod; None when ``seconds`` pass first or it
        is deleted. A watch that breaks (a transient failure) is resumed with the time that is left."""
        deadline = anyio.current_time() + seconds
        while (left := deadline - anyio.current_time()) > 0:
            chunk = max(1, min(int(left), 60))
            found = await self._call(f"watching pod {name}", partial(self._watch_once, name, done, chunk))
            if found is not None:
                return found if found.get("kind") != "_deleted" else None
        return None

    def _watch_once(
        self, name: str, done: Callable[[dict[str, Any]], bool], seconds: int
    ) -> dict[str, Any] | None:
        watcher: Any = _WATCH()
        events: Iterator[Any] = watcher.stream(
            self.core.list_namespaced_pod,
            self.namespace,
            field_selector=f"metadata.name={name}",
            timeout_seconds=seconds,
            _request_timeout=seconds + self.request_seconds,
            deserialize=False,
        )
        try:
            for event in events:
                pod = dict(event.get("object") or {})
                if event.get("type") == "DELETED":
                    return {"kind": "_deleted"}
                if done(pod):
                    return pod
        finally:
            watcher.stop()
        return None

    # -- discovery -------------------------------------------------------------------------------------

    async def sandbox_claim_versions(self) -> list[str]:
        """The versions of agent-sandbox's ``extensions.agents.x-k8s.io`` group the cluster serves
        (empty: its SandboxClaim CRD is not installed), from the API's resource discovery."""
        fn = partial(
            client.ApisApi(self.api_client).get_api_versions,
            _preload_content=False,
            _request_timeout=self._timeout(),
        )
        groups = (_json(await self._call("listing the API groups", fn)) or {}).get("groups") or []
        for group in groups:
            if group.get("name") == SANDBOX_GROUP:
                return [str(v.get("version")) for v in group.get("versions") or []]
        return []
