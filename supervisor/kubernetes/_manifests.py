"""The Kubernetes objects of one launch, as plain JSON documents: its Secret, NetworkPolicy and Pod.

Every measure of SECURITY.md's "Role containers" table, in Kubernetes terms, is fixed here, as
:func:`supervisor.launch.container_kwargs` fixes it for Docker: a spec chooses the image, the command,
non-secret environment, the files of its channel and the size of the limits, never whether they apply.

=====================================  ===================================================================
Docker                                 Pod
=====================================  ===================================================================
``user 10001:10001``                   ``runAsUser``/``runAsGroup`` 10001, ``runAsNonRoot``
``cap_drop ALL``, not privileged       ``capabilities.drop [ALL]``, ``privileged: false``
``no-new-privileges``                  ``allowPrivilegeEscalation: false``
default seccomp profile                ``seccompProfile: RuntimeDefault`` (pod and container)
``read_only`` root, ``/tmp`` tmpfs     ``readOnlyRootFilesystem``, ``/tmp`` an in-memory ``emptyDir``
``network_mode none`` + socket         a NetworkPolicy: no ingress, egress to the supervisor's pods only
token file, read-only bind mount       a Secret volume, read-only, ``0440`` (group 10001), deleted with it
memory, CPU limits                     ``resources.limits`` = ``requests`` (and ephemeral storage)
the launcher's deadline                ``activeDeadlineSeconds`` (the kubelet kills it, too)
no engine socket                       ``automountServiceAccountToken: false``, ``enableServiceLinks: false``
=====================================  ===================================================================

The pids and open-file limits have no per-pod field (they are the kubelet's and the runtime's).
Each object carries the labels :func:`labels` gives; the Secret and the NetworkPolicy get an owner
reference to their Pod (:func:`owner_reference`) once it exists, so the cluster deletes them with it.
"""

from __future__ import annotations

import base64
import math
from collections.abc import Mapping
from typing import Any

from store.config import KubernetesConfig
from supervisor.launch import (
    CONTAINER_MOUNT,
    LABEL_LAUNCH,
    LABEL_SUPERVISOR,
    LaunchSpec,
    container_name,
)

__all__ = [
    "ANNOTATION_ATTEMPT",
    "CA_FILE",
    "CONTAINER",
    "LABEL_COMPONENT",
    "LABEL_OWNER",
    "ROLE_COMPONENT",
    "SANDBOX_GROUP",
    "labels",
    "network_policy",
    "object_name",
    "owner_reference",
    "pod",
    "sandbox_claim",
    "secret",
]

CONTAINER = "role"
CA_FILE = "ca.crt"
"""The CA's file in the channel Secret (``ROUNDTABLE_CA_FILE`` points at it)."""
ANNOTATION_ATTEMPT = "roundtable.attempt"
"""The annotation, random for each object of each attempt, by which a launcher knows its own objects."""
LABEL_OWNER = "roundtable.owner"
LABEL_COMPONENT = "app.kubernetes.io/component"
ROLE_COMPONENT = "roundtable-role"
SANDBOX_GROUP = "extensions.agents.x-k8s.io"
_RUN_AS = 10001
_SECRET_MODE = 0o440
_MAX_SECRET_BYTES = 1024 * 1024
_LABEL_VALUE_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.")


def object_name(launch_id: str) -> str:
    """The name of a launch's Pod, Secret and NetworkPolicy (DNS-1123: the launch id in lower case)."""
    return container_name(launch_id).lower()


def _label_value(value: str) -> str:
    """A label value: at most 63 characters of ``[A-Za-z0-9-_.]``, alphanumeric at both ends."""
    cleaned = "".join(c if c in _LABEL_VALUE_CHARS else "_" for c in value)[:63]
    return cleaned.strip("-_.")


def labels(spec: LaunchSpec, supervisor_id: str, owner: str | None) -> dict[str, str]:
    """The labels of every object of a launch: the reaper finds them by these."""
    found = {
        "app.kubernetes.io/managed-by": "roundtable",
        LABEL_COMPONENT: ROLE_COMPONENT,
        LABEL_SUPERVISOR: supervisor_id,
        LABEL_LAUNCH: _label_value(spec.launch_id),
        "roundtable.proposal": _label_value(spec.proposal_id),
        "roundtable.role": _label_value(spec.role),
    }
    if owner:
        found[LABEL_OWNER] = _label_value(owner)
    return found


def _metadata(spec: LaunchSpec, supervisor_id: str, owner: str | None, namespace: str) -> dict[str, Any]:
    return {
        "name": object_name(spec.launch_id),
        "namespace": namespace,
        "labels": labels(spec, supervisor_id, owner),
    }


def secret(
    spec: LaunchSpec,
    files: Mapping[str, bytes],
    *,
    supervisor_id: str,
    owner: str | None,
    namespace: str,
) -> dict[str, Any]:
    """The launch's channel Secret: the token file and the files the runtime directory holds (and the CA).

    Immutable: nothing can change the grant's token after the Pod reads it."""
    if sum(len(data) for data in files.values()) > _MAX_SECRET_BYTES:
        raise ValueError("the launch's files exceed the 1 MiB a Secret holds")
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": _metadata(spec, supervisor_id, owner, namespace),
        "type": "Opaque",
        "immutable": True,
        "data": {name: base64.b64encode(data).decode("ascii") for name, data in sorted(files.items())},
    }


def network_policy(
    spec: LaunchSpec, config: KubernetesConfig, *, port: int, supervisor_id: str, owner: str | None
) -> dict[str, Any]:
    """The launch's NetworkPolicy: nothing may reach the Pod; it may reach the supervisor's pods on the
    endpoint's port only (and the cluster DNS on port 53 when ``config.dns``)."""
    egress: list[dict[str, Any]] = [
        {
            "to": [{"podSelector": {"matchLabels": dict(config.supervisor_selector)}}],
            "ports": [{"protocol": "TCP", "port": port}],
        }
    ]
    if config.dns:
        egress.append(
            {
                "to": [
                    {
                        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}},
                        "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}},
                    }
                ],
                "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}],
            }
        )
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": _metadata(spec, supervisor_id, owner, config.namespace),
        "spec": {
            "podSelector": {"matchLabels": {LABEL_LAUNCH: _label_value(spec.launch_id)}},
            "policyTypes": ["Ingress", "Egress"],
            "ingress": [],
            "egress": egress,
        },
    }


def _quantity_cpu(cpus: float) -> str:
    return f"{max(1, round(cpus * 1000))}m"


def pod(
    spec: LaunchSpec,
    config: KubernetesConfig,
    *,
    memory_bytes: int,
    cpus: float,
    supervisor_id: str,
    owner: str | None,
    has_ca: bool,
    host_alias: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The launch's Pod, with every hardening measure of the module docstring, always.

    ``host_alias`` (``{"ip": ..., "hostnames": [...]}``) goes into ``hostAliases``: how a pod without
    DNS finds the capability endpoint's host. The termination message comes from its file only
    (``File``): a log line, which nobody has redacted, never lands in the pod's status."""
    environment = {
        **spec.environment,
        "ROUNDTABLE_CAPABILITY_URL": config.capability_url,
        "ROUNDTABLE_CHANNEL_DIR": CONTAINER_MOUNT,
        "ROUNDTABLE_TOKEN_FILE": f"{CONTAINER_MOUNT}/token",
    }
    if has_ca:
        environment["ROUNDTABLE_CA_FILE"] = f"{CONTAINER_MOUNT}/{CA_FILE}"
    limits = {
        "memory": str(memory_bytes),
        "cpu": _quantity_cpu(cpus),
        "ephemeral-storage": config.ephemeral_storage,
    }
    container: dict[str, Any] = {
        "name": CONTAINER,
        "image": config.image or spec.image,
        "imagePullPolicy": config.image_pull_policy,
        "env": [{"name": key, "value": value} for key, value in sorted(environment.items())],
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": _RUN_AS,
            "runAsGroup": _RUN_AS,
            "privileged": False,
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"]},
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "resources": {"limits": limits, "requests": dict(limits)},
        "volumeMounts": [
            {"name": "channel", "mountPath": CONTAINER_MOUNT, "readOnly": True},
            {"name": "tmp", "mountPath": "/tmp"},  # noqa: S108 (the pod's own emptyDir)
        ],
        "terminationMessagePolicy": "File",
    }
    if spec.entrypoint is not None:
        container["command"] = list(spec.entrypoint)
    if spec.command:
        container["args"] = list(spec.command)
    aliases = {"hostAliases": [host_alias]} if host_alias else {}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": _metadata(spec, supervisor_id, owner, config.namespace),
        "spec": {
            **aliases,
            "restartPolicy": "Never",
            "activeDeadlineSeconds": max(1, math.ceil(spec.timeout_seconds)),
            "terminationGracePeriodSeconds": 5,
            "automountServiceAccountToken": False,
            "enableServiceLinks": False,
            "hostNetwork": False,
            "hostPID": False,
            "hostIPC": False,
            "securityContext": {
                "runAsNonRoot": True,
                "runAsUser": _RUN_AS,
                "runAsGroup": _RUN_AS,
                "fsGroup": _RUN_AS,
                "seccompProfile": {"type": "RuntimeDefault"},
            },
            "containers": [container],
            "volumes": [
                {
                    "name": "channel",
                    "secret": {
                        "secretName": object_name(spec.launch_id),
                        "defaultMode": _SECRET_MODE,
                        "optional": False,
                    },
                },
                {"name": "tmp", "emptyDir": {"medium": "Memory", "sizeLimit": config.tmp_size}},
            ],
        },
    }


def owner_reference(pod_name: str, pod_uid: str) -> dict[str, Any]:
    """The owner reference that makes the cluster delete an object with its Pod."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "name": pod_name,
        "uid": pod_uid,
        "blockOwnerDeletion": False,
        "controller": False,
    }


def sandbox_claim(
    spec: LaunchSpec, *, template: str, supervisor_id: str, owner: str | None, namespace: str, version: str
) -> dict[str, Any]:
    """An agent-sandbox ``SandboxClaim`` of ``template`` for the launch (``extensions.agents.x-k8s.io``).

    A claim names a ``SandboxTemplate`` whose pod spec is fixed and adds only environment and pod
    metadata: it cannot mount the launch's Secret, so docs/kubernetes.md says why the launcher runs
    Pods even where the CRD is installed. The claim shuts down (``Delete``) at the deadline."""
    from datetime import UTC, datetime, timedelta

    shutdown = datetime.now(UTC) + timedelta(seconds=math.ceil(spec.timeout_seconds))
    return {
        "apiVersion": f"{SANDBOX_GROUP}/{version}",
        "kind": "SandboxClaim",
        "metadata": _metadata(spec, supervisor_id, owner, namespace),
        "spec": {
            "sandboxTemplateRef": {"name": template},
            "lifecycle": {
                "shutdownTime": shutdown.strftime("%Y-%m-%dT%H:%M:%SZ"),
                "shutdownPolicy": "Delete",
            },
            "additionalPodMetadata": {"labels": labels(spec, supervisor_id, owner)},
        },
    }
