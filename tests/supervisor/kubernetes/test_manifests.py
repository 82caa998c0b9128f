"""Every document the Kubernetes launcher builds: valid for the pinned Kubernetes version's OpenAPI
schemas (kubernetes-validate, offline), and every hardening measure present, each asserted alone so
that removing any one fails a test."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest

from store.config import KubernetesConfig
from supervisor.kubernetes import network_policy, object_name, owner_reference, pod, sandbox_claim, secret
from supervisor.launch import CONTAINER_MOUNT, LaunchLimits, LaunchSpec
from tests.supervisor.kubernetes._fake_api import K8S_VERSION

CONFIG = KubernetesConfig(capability_url="https://roundtable-supervisor.roundtable.svc:8443")
SPEC = LaunchSpec(
    launch_id="L-20260101T000000000000Z-0123456789ab",
    role="memory_oracle",
    proposal_id="P-20260101T000000000000Z-aaaaaaaaaaaa",
    image="roundtable-role:0.1.0",
    command=("--provider", "judge"),
    entrypoint=("/opt/roundtable/venv/bin/python", "-m", "roles.runner"),
    environment={"ROUNDTABLE_PROVIDER": "judge"},
    runtime_dir=Path("/tmp/unused"),
    limits=LaunchLimits(memory_bytes=96 * 1024**2, cpus=0.5),
    timeout_seconds=90.5,
)
IDS: dict[str, Any] = {"supervisor_id": "rt0123456789abcd", "owner": "123-0000abcd"}


def _pod(**overrides: Any) -> dict[str, Any]:
    return pod(SPEC, CONFIG, memory_bytes=96 * 1024**2, cpus=0.5, has_ca=True, **IDS, **overrides)


def _container() -> dict[str, Any]:
    containers = _pod()["spec"]["containers"]
    assert len(containers) == 1
    return dict(containers[0])


def test_every_document_is_valid_for_the_pinned_kubernetes_version() -> None:
    documents = [
        _pod(),
        pod(SPEC, CONFIG, memory_bytes=6 * 1024**2, cpus=0.01, has_ca=False, **IDS),
        secret(SPEC, {"token": b"t", "ca.crt": b"pem"}, namespace="roundtable", **IDS),
        network_policy(SPEC, CONFIG, port=8443, **IDS),
        network_policy(SPEC, CONFIG.model_copy(update={"dns": True}), port=443, **IDS),
    ]
    for document in documents:
        kubernetes_validate.validate(document, K8S_VERSION, strict=True)


def test_the_validator_refuses_what_the_schema_does_not_allow() -> None:
    broken = _pod()
    broken["spec"]["containers"][0]["securityContext"]["readOnlyRootFilesystm"] = True
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, K8S_VERSION, strict=True)


def test_pod_runs_as_the_container_user_never_root() -> None:
    pod_context = _pod()["spec"]["securityContext"]
    context = _container()["securityContext"]
    assert pod_context["runAsNonRoot"] is True and context["runAsNonRoot"] is True
    assert pod_context["runAsUser"] == context["runAsUser"] == 10001
    assert pod_context["runAsGroup"] == context["runAsGroup"] == 10001


def test_pod_root_filesystem_is_read_only() -> None:
    assert _container()["securityContext"]["readOnlyRootFilesystem"] is True


def test_pod_drops_every_capability_and_adds_none() -> None:
    capabilities = _container()["securityContext"]["capabilities"]
    assert capabilities == {"drop": ["ALL"]}


def test_pod_cannot_escalate_privileges() -> None:
    context = _container()["securityContext"]
    assert context["allowPrivilegeEscalation"] is False
    assert context["privileged"] is False


def test_pod_uses_the_runtime_default_seccomp_profile() -> None:
    assert _pod()["spec"]["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert _container()["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}


def test_pod_gets_no_service_account_token_and_no_host_namespaces() -> None:
    spec = _pod()["spec"]
    assert spec["automountServiceAccountToken"] is False
    assert spec["enableServiceLinks"] is False
    assert spec["hostNetwork"] is False and spec["hostPID"] is False and spec["hostIPC"] is False


def test_pod_has_resource_limits_equal_to_its_requests() -> None:
    resources = _container()["resources"]
    assert resources["limits"] == {"memory": str(96 * 1024**2), "cpu": "500m", "ephemeral-storage": "256Mi"}
    assert resources["requests"] == resources["limits"]


def test_pod_has_an_active_deadline_and_never_restarts() -> None:
    spec = _pod()["spec"]
    assert spec["activeDeadlineSeconds"] == 91  # 90.5 s, rounded up
    assert spec["restartPolicy"] == "Never"


def test_pod_mounts_its_secret_read_only_and_tmp_in_memory() -> None:
    spec = _pod()["spec"]
    mounts = {m["name"]: m for m in _container()["volumeMounts"]}
    assert mounts["channel"] == {"name": "channel", "mountPath": CONTAINER_MOUNT, "readOnly": True}
    assert mounts["tmp"]["mountPath"] == "/tmp"
    volumes = {v["name"]: v for v in spec["volumes"]}
    assert volumes["channel"]["secret"] == {
        "secretName": object_name(SPEC.launch_id),
        "defaultMode": 0o440,
        "optional": False,
    }
    assert volumes["tmp"]["emptyDir"] == {"medium": "Memory", "sizeLimit": "64Mi"}
    assert set(volumes) == {"channel", "tmp"}  # no hostPath, nothing else


def test_pod_reaches_the_endpoint_by_url_and_carries_no_secret_in_its_environment() -> None:
    env = {e["name"]: e["value"] for e in _container()["env"]}
    assert env["ROUNDTABLE_CAPABILITY_URL"] == CONFIG.capability_url
    assert env["ROUNDTABLE_CA_FILE"] == f"{CONTAINER_MOUNT}/ca.crt"
    assert env["ROUNDTABLE_TOKEN_FILE"] == f"{CONTAINER_MOUNT}/token"
    assert env["ROUNDTABLE_PROVIDER"] == "judge"
    assert all("valueFrom" not in e for e in _container()["env"])
    assert _container()["command"] == list(SPEC.entrypoint or ())
    assert _container()["args"] == ["--provider", "judge"]


def test_the_cluster_image_replaces_the_local_tag_when_configured() -> None:
    assert _container()["image"] == "roundtable-role:0.1.0"
    configured = CONFIG.model_copy(update={"image": "registry.example/roundtable-role:0.1.0"})
    built = pod(SPEC, configured, memory_bytes=96 * 1024**2, cpus=0.5, has_ca=False, **IDS)
    assert built["spec"]["containers"][0]["image"] == "registry.example/roundtable-role:0.1.0"


def test_every_object_carries_the_labels_the_reaper_finds_it_by() -> None:
    for document in (
        _pod(),
        secret(SPEC, {"token": b"t"}, namespace="n", **IDS),
        network_policy(SPEC, CONFIG, port=1, **IDS),
    ):
        labels = document["metadata"]["labels"]
        assert labels["roundtable.supervisor"] == "rt0123456789abcd"
        assert labels["roundtable.launch"] == SPEC.launch_id
        assert labels["roundtable.owner"] == "123-0000abcd"
        assert labels["app.kubernetes.io/component"] == "roundtable-role"
        assert document["metadata"]["name"] == "roundtable-l-20260101t000000000000z-0123456789ab"


def test_secret_holds_the_files_immutably() -> None:
    document = secret(SPEC, {"token": b"tok", "ca.crt": b"pem"}, namespace="roundtable", **IDS)
    assert document["immutable"] is True and document["type"] == "Opaque"
    assert base64.b64decode(document["data"]["token"]) == b"tok"
    with pytest.raises(ValueError, match="1 MiB"):
        secret(SPEC, {"token": b"x" * (1024 * 1024 + 1)}, namespace="roundtable", **IDS)


def test_network_policy_denies_ingress_and_allows_only_the_supervisor_and_dns() -> None:
    spec = network_policy(SPEC, CONFIG.model_copy(update={"dns": True}), port=8443, **IDS)["spec"]
    assert spec["podSelector"] == {"matchLabels": {"roundtable.launch": SPEC.launch_id}}
    assert spec["policyTypes"] == ["Ingress", "Egress"]
    assert spec["ingress"] == []
    supervisor, dns = spec["egress"]
    assert supervisor == {
        "to": [{"podSelector": {"matchLabels": {"app.kubernetes.io/name": "roundtable-supervisor"}}}],
        "ports": [{"protocol": "TCP", "port": 8443}],
    }
    assert {p["port"] for p in dns["ports"]} == {53}
    no_dns = network_policy(SPEC, CONFIG, port=8443, **IDS)["spec"]
    assert no_dns["egress"] == [supervisor]  # the default: no DNS, a lookup is a way out


def test_without_dns_the_pod_finds_the_endpoint_in_its_host_aliases() -> None:
    assert KubernetesConfig().dns is False
    alias = {"ip": "10.96.0.20", "hostnames": ["roundtable-supervisor.roundtable.svc"]}
    document = _pod(host_alias=alias)
    assert document["spec"]["hostAliases"] == [alias]
    kubernetes_validate.validate(document, K8S_VERSION, strict=True)
    assert "hostAliases" not in _pod()["spec"]


def test_no_log_line_lands_in_the_pods_status() -> None:
    assert _container()["terminationMessagePolicy"] == "File"  # not FallbackToLogsOnError (unredacted)


def test_owner_reference_names_the_pod() -> None:
    assert owner_reference("p", "uid-1") == {
        "apiVersion": "v1",
        "kind": "Pod",
        "name": "p",
        "uid": "uid-1",
        "blockOwnerDeletion": False,
        "controller": False,
    }


def test_sandbox_claim_has_agent_sandbox_shape() -> None:
    claim = sandbox_claim(SPEC, template="roundtable-role", namespace="roundtable", version="v1alpha1", **IDS)
    assert claim["apiVersion"] == "extensions.agents.x-k8s.io/v1alpha1"
    assert claim["kind"] == "SandboxClaim"
    assert claim["spec"]["sandboxTemplateRef"] == {"name": "roundtable-role"}
    assert claim["spec"]["lifecycle"]["shutdownPolicy"] == "Delete"
    assert claim["spec"]["additionalPodMetadata"]["labels"]["roundtable.launch"] == SPEC.launch_id
    assert "env" not in claim["spec"]  # the token never goes into a claim's environment
