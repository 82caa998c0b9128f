"""The Kubernetes launcher: one recorded launch as a hardened Pod, from its Secret to its deletion.

:meth:`KubernetesLauncher.run` implements :class:`supervisor.docker.Launcher` for a cluster. For a
launch the store has recorded as ``requested``, in the launcher's namespace:

1. creates the channel Secret (the runtime directory's token file and files, and the endpoint's CA)
   and the launch's NetworkPolicy, both labelled, so that the reaper finds them even if what follows
   never happens;
2. creates the Pod (:func:`~supervisor.kubernetes._manifests.pod`), commits its uid (``starting``), and
   makes the Pod the owner of the Secret and the NetworkPolicy, so the cluster deletes them with it;
3. watches the Pod until it runs (``running``), then until it ends or the deadline passes (the
   kubelet's ``activeDeadlineSeconds`` and the launcher's own, a grace later): ``timeout``;
4. reads the exit status (``OOMKilled`` too) and a bounded, redacted tail of the log;
5. deletes the Pod, the Secret and the NetworkPolicy (each retried; 404 is done) and records the end.

A 409 on a create means the name is taken: by our own create whose answer was lost, or by someone
else (the launch fails). Labels are predictable: only an object bearing the attempt's random
``roundtable.attempt`` annotation (one per object; a Secret: with the same data) is taken. Whatever
goes wrong (an API error, a failing hook, cancellation), a shielded, time-bounded clean-up deletes
the attempt's objects (each delete conditioned on the uid) and records ``failed`` or ``cancelled``.
Without DNS (``[kubernetes] dns = false``, the default) the pod finds the endpoint's host in its
``hostAliases``: ``capability_ip``, or the address the supervisor resolves the host to at launch.
The pod reaches the supervisor over TLS (``capability_url``), never over the launch socket.
"""

from __future__ import annotations

import contextlib
import hmac
import ipaddress
import json
import secrets
import socket
import time
from collections.abc import Collection
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio
import structlog

from store.config import KubernetesConfig
from store.errors import Conflict, LaunchFailed, RoundtableError
from store.launches import MAX_LOG_TAIL_BYTES, LaunchStore
from supervisor.docker import (
    Claimed,
    OrphanHook,
    PhaseHook,
    ReapReport,
    RunningLaunches,
    Spawn,
    call_hook,
    record_abort,
    record_end,
    recover,
)
from supervisor.kubernetes import _manifests as manifests
from supervisor.kubernetes._api import AlreadyExists, ClusterApi, Kind
from supervisor.kubernetes._reaper import OwnersAlive, reap_cluster
from supervisor.launch import (
    ContainerOutcome,
    LaunchPhase,
    LaunchSpec,
    end_status,
    parse_memory,
    redacted_tail,
    tail_margin,
)

__all__ = ["KubernetesLauncher"]

_log = structlog.get_logger("roundtable.kubernetes")
_KINDS: tuple[Kind, ...] = ("pod", "secret", "networkpolicy")
_DEADLINE_GRACE = 15.0
_LOG_TAIL_LINES = 2_000
_SOCKET = "mcp.sock"


@dataclass
class _Attempt:
    spec: LaunchSpec
    started: float = field(default_factory=time.monotonic)
    stage: str = "prepare"
    created: bool = False
    pod: dict[str, Any] | None = None
    timed_out: bool = False
    nonces: dict[Kind, str] = field(default_factory=lambda: {k: secrets.token_hex(16) for k in _KINDS})
    uids: dict[Kind, str] = field(default_factory=dict)


def _same(a: str, b: str) -> bool:
    return hmac.compare_digest(a.encode(), b.encode())


def _marked(found: dict[str, Any], nonce: str) -> bool:
    """Whether ``found`` bears the attempt's annotation ``nonce`` (an object someone else made does not)."""
    annotations = (found.get("metadata") or {}).get("annotations") or {}
    return _same(str(annotations.get(manifests.ANNOTATION_ATTEMPT) or ""), nonce)


def _data(document: dict[str, Any]) -> str:
    return json.dumps(document.get("data") or {}, sort_keys=True)


def _is_address(host: str) -> bool:
    with contextlib.suppress(ValueError):
        return bool(ipaddress.ip_address(host))
    return False


def _terminated(pod: dict[str, Any]) -> dict[str, Any]:
    for status in (pod.get("status") or {}).get("containerStatuses") or []:
        if status.get("name") == manifests.CONTAINER:
            return dict((status.get("state") or {}).get("terminated") or {})
    return {}


def _phase(pod: dict[str, Any]) -> str:
    return str((pod.get("status") or {}).get("phase") or "Pending")


def _ended(pod: dict[str, Any]) -> bool:
    return _phase(pod) in ("Succeeded", "Failed")


_CANNOT_START = frozenset(
    {
        "ErrImagePull",
        "ImagePullBackOff",
        "InvalidImageName",
        "CreateContainerConfigError",
        "CreateContainerError",
    }
)


def _stuck(pod: dict[str, Any]) -> str | None:
    """Why the role container cannot start (a waiting reason no retry of the kubelet cures), if so."""
    for status in (pod.get("status") or {}).get("containerStatuses") or []:
        waiting = (status.get("state") or {}).get("waiting") or {}
        if waiting.get("reason") in _CANNOT_START:
            return f"{waiting['reason']}: {waiting.get('message') or 'no message'}"
    return None


def _started(pod: dict[str, Any]) -> bool:
    return _phase(pod) != "Pending" or _stuck(pod) is not None


class KubernetesLauncher(RunningLaunches):
    """Runs role launches as Pods in ``config.namespace`` through ``api`` and records every launch.

    ``live_owners`` says which supervisor instances (``roundtable.owner`` labels) still live: the reaper
    leaves their pods alone (see :mod:`supervisor.kubernetes._reaper`)."""

    def __init__(
        self,
        launches: LaunchStore,
        api: ClusterApi,
        config: KubernetesConfig,
        *,
        supervisor_id: str,
        owner: str | None = None,
        live_owners: OwnersAlive | None = None,
        cleanup_seconds: float = 60.0,
        log_bytes: int = MAX_LOG_TAIL_BYTES,
        deadline_grace: float = _DEADLINE_GRACE,
    ):
        """``deadline_grace`` is how long past the deadline the launcher waits for the kubelet to end
        the Pod (``activeDeadlineSeconds``) before it deletes it itself."""
        if not config.capability_url.startswith("https://"):
            raise LaunchFailed(
                "[kubernetes] capability_url must be the https:// URL of the capability endpoint"
            )
        super().__init__(
            launches, supervisor_id=supervisor_id, cleanup_seconds=cleanup_seconds, log_bytes=log_bytes
        )
        self.api, self.config, self.deadline_grace = api, config, deadline_grace
        self.owner, self.live_owners = owner, live_owners

    async def aclose(self) -> None:
        """Close the API connection."""
        await self.api.aclose()

    async def run(
        self,
        spec: LaunchSpec,
        *,
        on_phase: PhaseHook | None = None,
        claimed: Claimed | None = None,
        spawn: Spawn | None = None,
    ) -> ContainerOutcome:
        """Run the recorded launch ``spec.launch_id`` as a Pod to its end (module docstring).

        There is no warm pool on a cluster: ``claimed`` is refused; ``spawn`` is not used (deletion is
        quick and the cluster's garbage collector backs it). Outcomes and errors are those of
        :meth:`supervisor.docker.DockerLauncher.run`."""
        if claimed is not None:
            raise Conflict("the Kubernetes launcher has no warm pool: a launch cannot claim a container")
        return await self._tracked(spec, partial(self._run, _Attempt(spec), on_phase))

    async def _host_alias(self) -> dict[str, Any] | None:
        """The pod's ``hostAliases`` entry for the endpoint's host, when it has no DNS to find it."""
        host = urlsplit(self.config.capability_url).hostname or ""
        address = self.config.capability_ip
        if not address:
            if self.config.dns or _is_address(host):
                return None
            try:
                found = await anyio.getaddrinfo(host, None, type=socket.SOCK_STREAM)
            except OSError as exc:
                raise LaunchFailed(
                    f"cannot resolve the capability host {host} ({exc}): set [kubernetes] capability_ip"
                ) from None
            address = str(found[0][4][0])
        return {"ip": address, "hostnames": [host]}

    def _documents(self, attempt: _Attempt, alias: dict[str, Any] | None) -> dict[Kind, dict[str, Any]]:
        spec = attempt.spec
        files = _channel_files(spec.runtime_dir)
        if self.config.ca_file:
            try:
                files[manifests.CA_FILE] = Path(self.config.ca_file).read_bytes()
            except OSError as exc:
                raise LaunchFailed(f"cannot read [kubernetes] ca_file {self.config.ca_file}: {exc}") from None
        ids, owner = self.supervisor_id, self.owner
        memory = spec.limits.memory_bytes
        if self.config.memory_limit:
            memory = min(memory, parse_memory(self.config.memory_limit))
        cpus = min(spec.limits.cpus, self.config.cpus) if self.config.cpus else spec.limits.cpus
        port = urlsplit(self.config.capability_url).port or 443
        documents: dict[Kind, dict[str, Any]] = {
            "secret": manifests.secret(
                spec, files, namespace=self.config.namespace, supervisor_id=ids, owner=owner
            ),
            "networkpolicy": manifests.network_policy(
                spec, self.config, port=port, supervisor_id=ids, owner=owner
            ),
            "pod": manifests.pod(
                spec,
                self.config,
                memory_bytes=memory,
                cpus=cpus,
                has_ca=bool(self.config.ca_file),
                supervisor_id=ids,
                owner=owner,
                host_alias=alias,
            ),
        }
        for kind, document in documents.items():
            document["metadata"]["annotations"] = {manifests.ANNOTATION_ATTEMPT: attempt.nonces[kind]}
        return documents

    async def _create(self, attempt: _Attempt, kind: Kind, document: dict[str, Any]) -> dict[str, Any]:
        """Create ``document``, or take the object of its name if a lost answer of ours created it (it
        bears the attempt's annotation; a Secret, the same data): any other is someone else's."""
        try:
            made = await self.api.create(kind, document)
        except AlreadyExists:
            made = await self.api.read(kind, document["metadata"]["name"]) or {}
            ours = _marked(made, attempt.nonces[kind])
            if not ours or (kind == "secret" and not _same(_data(made), _data(document))):
                raise
        attempt.uids[kind] = str(made["metadata"]["uid"])
        return made

    async def _run(self, attempt: _Attempt, on_phase: PhaseHook | None) -> ContainerOutcome:
        spec = attempt.spec
        name = manifests.object_name(spec.launch_id)
        log = _log.bind(launch_id=spec.launch_id, pod=name, namespace=self.config.namespace)
        try:
            await call_hook(on_phase, LaunchPhase.CREATING)
            documents = self._documents(attempt, await self._host_alias())
            attempt.stage, attempt.created = "create", True
            await self._create(attempt, "secret", documents["secret"])
            await self._create(attempt, "networkpolicy", documents["networkpolicy"])
            attempt.pod = await self._create(attempt, "pod", documents["pod"])
            uid = str(attempt.pod["metadata"]["uid"])
            attempt.stage = "record"
            await self.launches.db.run(self.launches.mark_starting, spec.launch_id, uid)
            reference = manifests.owner_reference(name, uid)
            await self.api.set_owner("secret", name, reference)
            await self.api.set_owner("networkpolicy", name, reference)
            log.info("pod_created", uid=uid)
            await call_hook(on_phase, LaunchPhase.CREATED)
            attempt.stage = "start"
            budget = spec.timeout_seconds + self.deadline_grace
            started = await self.api.wait_pod(name, _started, budget)
            if started is not None:
                attempt.pod = started
                if (stuck := _stuck(started)) is not None:
                    raise LaunchFailed(f"pod {name} cannot start: {stuck}")
            await self.launches.db.run(self.launches.mark_running, spec.launch_id)
            await call_hook(on_phase, LaunchPhase.RUNNING)
            attempt.stage = "wait"
            left = budget - (time.monotonic() - attempt.started)
            ended = None if started is None else await self.api.wait_pod(name, _ended, max(left, 0.001))
            if ended is None or (ended.get("status") or {}).get("reason") == "DeadlineExceeded":
                attempt.timed_out = True
                log.warning("deadline_exceeded", timeout_seconds=spec.timeout_seconds)
            if ended is not None:
                attempt.pod = ended
            attempt.stage = "finish"
            with anyio.move_on_after(self.cleanup_seconds, shield=True):
                return await self._finish(attempt, on_phase)
            raise LaunchFailed(f"recording the end of {spec.launch_id} took over {self.cleanup_seconds}s")
        except BaseException as exc:
            abort = partial(self._abort, attempt, on_phase)
            await recover(
                exc, stage=attempt.stage, abort=abort, cleanup_seconds=self.cleanup_seconds, log=log
            )

    async def _finish(self, attempt: _Attempt, on_phase: PhaseHook | None) -> ContainerOutcome:
        spec, pod = attempt.spec, attempt.pod or {}
        warnings: list[str] = []
        await call_hook(on_phase, LaunchPhase.STOPPED)
        terminated = _terminated(pod)
        exit_code = int(terminated["exitCode"]) if terminated.get("exitCode") is not None else None
        oom = terminated.get("reason") == "OOMKilled"
        log_tail = await self._log_tail(spec, warnings)
        await self._delete_all(attempt, warnings)
        succeeded = exit_code if _phase(pod) == "Succeeded" else (exit_code or None)  # 0 only if it did
        status, reason = end_status(timed_out=attempt.timed_out, oom=oom, exit_code=succeeded)
        uid = str((pod.get("metadata") or {}).get("uid") or "") or None
        return await record_end(
            self.launches,
            spec,
            {"status": status, "reason": reason, "exit_code": exit_code, "oom": oom,
             "container_id": uid, "log_tail": log_tail},
            started=attempt.started,
            warnings=warnings,
            on_phase=on_phase,
        )  # fmt: skip

    async def _abort(self, attempt: _Attempt, on_phase: PhaseHook | None, *end: Any) -> None:
        """Delete whatever objects may exist and record ``end`` (status, reason, error); never raises."""
        spec, warnings = attempt.spec, list[str]()
        log_tail = None
        if attempt.created:
            if attempt.pod is not None and attempt.stage in ("wait", "finish"):
                log_tail = await self._log_tail(spec, warnings)
            await self._delete_all(attempt, warnings)
        await record_abort(self.launches, spec, end, log_tail=log_tail, warnings=warnings, on_phase=on_phase)

    async def _log_tail(self, spec: LaunchSpec, warnings: list[str]) -> str:
        keep = self.log_bytes + tail_margin(spec.redact)
        try:
            name = manifests.object_name(spec.launch_id)
            raw = await self.api.pod_log(name, tail_lines=_LOG_TAIL_LINES, keep_bytes=keep)
        except RoundtableError as exc:
            warnings.append(f"could not read the log: {exc.message}")
            return ""
        return redacted_tail(raw, spec.redact, self.log_bytes)

    async def _delete_all(self, attempt: _Attempt, warnings: list[str]) -> None:
        """Delete the attempt's objects: those it made (their uids), and those whose create answer it
        lost if they bear its annotation (after a failed create, the name may be someone else's);
        each delete is conditioned on the uid, so an object made in its place since stays."""
        name = manifests.object_name(attempt.spec.launch_id)
        for kind in _KINDS:
            try:
                uid = attempt.uids.get(kind)
                if uid is None:
                    found = await self.api.read(kind, name)
                    if found is None or not _marked(found, attempt.nonces[kind]):
                        continue
                    uid = str(found["metadata"]["uid"])
                await self.api.delete(kind, name, uid=uid)
            except RoundtableError as exc:
                warnings.append(f"could not delete {kind} {name} (the reaper will): {exc.message}")

    async def reap(self, *, on_orphan: OrphanHook | None = None, keep: Collection[str] = ()) -> ReapReport:
        """Fail the launches a previous supervisor left active and delete the pods, Secrets and
        NetworkPolicies of launches nobody runs (see :mod:`supervisor.kubernetes._reaper`)."""
        return await reap_cluster(
            self.api,
            self.launches,
            supervisor_id=self.supervisor_id,
            keep=self.running | frozenset(keep),
            on_orphan=on_orphan,
            live_owners=self.live_owners,
        )


def _channel_files(runtime_dir: Path | None) -> dict[str, bytes]:
    """The regular files of the launch's runtime directory (its token, the plan's files): the socket
    and a pool's FIFOs stay behind."""
    files: dict[str, bytes] = {}
    if runtime_dir is None:
        return files
    for entry in sorted(runtime_dir.iterdir()):
        if entry.name != _SOCKET and entry.is_file() and not entry.is_symlink():
            files[entry.name] = entry.read_bytes()
    if "token" not in files:
        raise LaunchFailed(f"the runtime directory {runtime_dir} holds no token file")
    return files
