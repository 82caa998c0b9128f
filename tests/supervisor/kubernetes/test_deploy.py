"""deploy/k8s/: every file valid for the pinned Kubernetes version, the supervisor's pod hardened, and
its RBAC exactly the verbs the launcher and the reaper use (observed on the fake API server)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from store import Store
from supervisor.kubernetes import KubernetesLauncher, object_name
from tests.supervisor.kubernetes._fake_api import K8S_VERSION, FakeCluster, Fault, PodScript
from tests.supervisor.kubernetes.conftest import K8sSpec

DEPLOY = Path(__file__).resolve().parents[3] / "deploy" / "k8s"
FILES = sorted(DEPLOY.glob("*.yaml"))


def _load(name: str) -> dict[str, Any]:
    return dict(yaml.safe_load((DEPLOY / name).read_text(encoding="utf-8")))


def test_the_deploy_directory_has_every_piece() -> None:
    kinds = sorted(_load(path.name)["kind"] for path in FILES)
    assert kinds == sorted(
        ["ConfigMap", "Deployment", "Namespace", "NetworkPolicy", "NetworkPolicy", "Role", "RoleBinding",
         "Service", "ServiceAccount"]
    )  # fmt: skip


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_each_file_is_valid_for_the_pinned_kubernetes_version(path: Path) -> None:
    documents = [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d]
    assert len(documents) == 1
    kubernetes_validate.validate(documents[0], K8S_VERSION, strict=True)


def test_the_supervisor_pod_is_hardened() -> None:
    spec = _load("deployment.yaml")["spec"]["template"]["spec"]
    assert spec["securityContext"]["runAsNonRoot"] is True
    assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    (container,) = spec["containers"]
    context = container["securityContext"]
    assert context["readOnlyRootFilesystem"] is True
    assert context["allowPrivilegeEscalation"] is False and context["privileged"] is False
    assert context["capabilities"] == {"drop": ["ALL"]}
    assert set(container["resources"]["limits"]) == {"cpu", "memory", "ephemeral-storage"}
    assert "--tls-cert" in container["args"] and "--tls-key" in container["args"]
    assert spec["serviceAccountName"] == "roundtable-supervisor"
    assert all(
        "value" not in e or "URL" not in e["name"] for e in container["env"]
    )  # the store URL from a Secret


def test_role_pods_are_denied_by_default() -> None:
    policy = _load("networkpolicy-roles-deny.yaml")["spec"]
    assert policy["podSelector"] == {"matchLabels": {"app.kubernetes.io/component": "roundtable-role"}}
    assert policy["policyTypes"] == ["Ingress", "Egress"]
    assert "ingress" not in policy and "egress" not in policy


def test_the_role_binding_names_the_role_and_the_service_account() -> None:
    binding = _load("rolebinding.yaml")
    assert binding["roleRef"]["name"] == _load("role.yaml")["metadata"]["name"]
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "roundtable-supervisor", "namespace": "roundtable"}
    ]
    assert _load("role.yaml")["kind"] == "Role"  # namespaced: no ClusterRole anywhere


_PATH = re.compile(
    r"^/(?:api/v1|apis/(?P<group>[^/]+)/v1)/namespaces/[^/]+/(?P<res>[a-z]+)(?P<name>/[^/]+)?(?P<log>/log)?$"
)
_VERBS = {"POST": "create", "PATCH": "patch", "DELETE": "delete"}


def _verbs_used(requests: list[tuple[str, str, bool]]) -> set[tuple[str, str, str]]:
    used: set[tuple[str, str, str]] = set()
    for method, path, watching in requests:
        match = _PATH.match(path)
        if match is None:
            assert path.rstrip("/") == "/apis", path  # discovery, a non-resource URL
            continue
        resource = match["res"] + ("/log" if match["log"] else "")
        if method == "GET":
            verb = "get" if match["name"] else ("watch" if watching else "list")
        else:
            verb = _VERBS[method]
        used.add((match["group"] or "", resource, verb))
    return used


@pytest.mark.anyio
async def test_rbac_grants_exactly_the_verbs_the_launcher_uses(
    launcher: KubernetesLauncher, k8s_spec: K8sSpec, cluster: FakeCluster, store: Store
) -> None:
    await launcher.run(k8s_spec())  # the whole lifecycle
    for resource in ("secrets", "networkpolicies", "pods"):
        cluster.faults.append(Fault("POST", resource, 500, after=True))
    await launcher.run(k8s_spec())  # lost create answers: each retry reads what it made
    cluster.faults.append(Fault("POST", "pods", 403))
    with pytest.raises(Exception, match="403"):
        await launcher.run(k8s_spec())  # a failed create: the clean-up reads before it deletes
    cluster.script = PodScript(exit_code=0)
    labels = {
        "roundtable.supervisor": "rtk8stest",
        "roundtable.launch": "L-x",
        "roundtable.owner": "9-deadbeef",
    }
    cluster.put(
        "pods",
        {
            "kind": "Pod",
            "metadata": {"name": object_name("L-x"), "namespace": "roundtable", "labels": labels},
        },
    )
    await launcher.reap()
    assert await launcher.api.sandbox_claim_versions() == []
    used = _verbs_used(cluster.requests)
    granted = {
        (group, resource, verb)
        for rule in _load("role.yaml")["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }
    assert used == granted


@pytest.mark.anyio
async def test_the_sandbox_claim_crd_is_found_by_discovery(
    launcher: KubernetesLauncher, cluster: FakeCluster
) -> None:
    cluster.sandbox = True
    assert await launcher.api.sandbox_claim_versions() == ["v1alpha1"]
