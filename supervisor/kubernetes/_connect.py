"""Connecting to a cluster: the official client's configuration from ``[kubernetes]``, and the launcher."""

from __future__ import annotations

from typing import Any

from store.config import KubernetesConfig
from store.errors import LaunchFailed
from store.launches import LaunchStore
from supervisor.kubernetes._api import ClusterApi
from supervisor.kubernetes._launcher import KubernetesLauncher
from supervisor.kubernetes._reaper import OwnersAlive

__all__ = ["api_client", "kubernetes_launcher"]


def api_client(config: KubernetesConfig) -> object:
    """The client for ``config``: its ``kubeconfig`` file, else the pod's service account (in the
    cluster), else ``~/.kube/config``; :class:`LaunchFailed` when none is usable."""
    import yaml
    from kubernetes import client
    from kubernetes import config as kube_module

    kube_config: Any = kube_module  # its loaders are untyped
    configuration = client.Configuration()
    try:
        if config.kubeconfig:
            kube_config.load_kube_config(config_file=config.kubeconfig, client_configuration=configuration)
        else:
            try:
                kube_config.load_incluster_config(client_configuration=configuration)
            except kube_config.ConfigException:
                kube_config.load_kube_config(client_configuration=configuration)
    except (kube_config.ConfigException, OSError, TypeError, ValueError, yaml.YAMLError) as exc:
        # A parser's message can quote the file (and so a credential in it): name the error only.
        detail = str(exc) if isinstance(exc, kube_config.ConfigException) else type(exc).__name__
        where = config.kubeconfig or "the service account or ~/.kube/config"
        raise LaunchFailed(f"no usable Kubernetes configuration in {where}: {detail}") from None
    configuration.retries = 0  # ClusterApi retries, counting its attempts
    return client.ApiClient(configuration)


def kubernetes_launcher(
    launches: LaunchStore,
    config: KubernetesConfig,
    *,
    supervisor_id: str,
    owner: str | None,
    live_owners: OwnersAlive | None,
) -> KubernetesLauncher:
    """The launcher ``[supervisor] launcher = "kubernetes"`` selects, connected as :func:`api_client` says."""
    from kubernetes import client

    connected = api_client(config)
    assert isinstance(connected, client.ApiClient)
    api = ClusterApi(connected, namespace=config.namespace)
    return KubernetesLauncher(
        launches, api, config, supervisor_id=supervisor_id, owner=owner, live_owners=live_owners
    )
