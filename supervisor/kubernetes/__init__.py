"""Launches on Kubernetes: the Pod, Secret and NetworkPolicy of a launch, the launcher that runs them
through the official client, and the reaper that deletes them by label (see docs/kubernetes.md).

Importing this package imports the ``kubernetes`` client, an optional dependency
(``pip install roundtable[kubernetes]``): the supervisor imports it only when ``[supervisor]
launcher = "kubernetes"``.
"""

from __future__ import annotations

from supervisor.kubernetes._api import AlreadyExists, ClusterApi, RetryPolicy, is_transient
from supervisor.kubernetes._connect import api_client, kubernetes_launcher
from supervisor.kubernetes._launcher import KubernetesLauncher
from supervisor.kubernetes._manifests import (
    LABEL_OWNER,
    labels,
    network_policy,
    object_name,
    owner_reference,
    pod,
    sandbox_claim,
    secret,
)
from supervisor.kubernetes._reaper import OwnersAlive, reap_cluster

__all__ = [
    "LABEL_OWNER",
    "AlreadyExists",
    "ClusterApi",
    "KubernetesLauncher",
    "OwnersAlive",
    "RetryPolicy",
    "api_client",
    "is_transient",
    "kubernetes_launcher",
    "labels",
    "network_policy",
    "object_name",
    "owner_reference",
    "pod",
    "reap_cluster",
    "sandbox_claim",
    "secret",
]
