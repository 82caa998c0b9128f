"""``[supervisor] launcher = "kubernetes"``: the supervisor runs a whole launch through the cluster
launcher (the fake API server behind a kubeconfig file), the grant's token reaching the Pod only as
its Secret, and a bad configuration is an error that names the key."""

from __future__ import annotations

import base64
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from store import InvalidArgument, LaunchFailed, Unauthenticated, open_store
from store._project import ProjectPaths
from store.config import KubernetesConfig, load_config
from store.launches import LaunchStatus
from supervisor._supervisor import Supervisor
from supervisor.kubernetes import KubernetesLauncher, api_client
from tests.capabilities.oracle_helpers import DIFF
from tests.supervisor.kubernetes._fake_api import FakeCluster

pytestmark = pytest.mark.anyio

_URL = "https://roundtable-supervisor.roundtable.svc:8443"


def _kubeconfig(path: Path, server: str) -> Path:
    path.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: fake\n"
        f"clusters:\n- name: fake\n  cluster:\n    server: {server}\n"
        "users:\n- name: fake\n  user: {}\n"
        "contexts:\n- name: fake\n  context:\n    cluster: fake\n    user: fake\n",
        encoding="utf-8",
    )
    return path


def _configure(project: ProjectPaths, extra: str) -> None:
    text = project.config_file.read_text(encoding="utf-8")
    text = text.replace('launcher = "docker"', 'launcher = "kubernetes"')
    text = text.replace('capability_url = ""', f'capability_url = "{_URL}"')
    text = text.replace('capability_ip = ""', 'capability_ip = "10.96.0.20"')
    project.config_file.write_text(text + extra, encoding="utf-8")


async def test_the_supervisor_runs_a_launch_as_a_pod(
    project: ProjectPaths, cluster: FakeCluster, tmp_path: Path
) -> None:
    kubeconfig = _kubeconfig(tmp_path / "kubeconfig", cluster.url)
    ca = tmp_path / "ca.pem"
    ca.write_text("-----BEGIN CERTIFICATE-----\nfake\n-----END CERTIFICATE-----\n", encoding="utf-8")
    text = project.config_file.read_text(encoding="utf-8")
    text = text.replace('kubeconfig = ""', f'kubeconfig = "{kubeconfig}"').replace(
        'ca_file = ""', f'ca_file = "{ca}"'
    )
    project.config_file.write_text(text, encoding="utf-8")
    _configure(project, "")
    store = open_store(project)
    try:
        task = store.tasks.create(title="t", actor="op")
        proposal, _ = store.proposals.create(
            task_id=task.id, agent_id="implementer-1", title="p", patch=DIFF, actor="implementer-1"
        )
        live_at_running: list[bool] = []

        def watch(phase: str, details: dict[str, Any]) -> None:
            if phase == "running":
                secret = next(o for o in cluster.created if o["kind"] == "Secret")
                token = base64.b64decode(secret["data"]["token"]).decode()
                live_at_running.append(store.grants.authenticate(token) is not None)
                assert base64.b64decode(secret["data"]["ca.crt"]) == ca.read_bytes()

        async with Supervisor(store) as supervisor:
            assert isinstance(supervisor.launcher, KubernetesLauncher)
            result = await supervisor.launch_role("memory_oracle", str(proposal["id"]), on_phase=watch)
        assert result.launch.status is LaunchStatus.EXITED
        assert live_at_running == [True]
        secret = next(o for o in cluster.created if o["kind"] == "Secret")
        with pytest.raises(Unauthenticated):  # revoked when the pod stopped
            store.grants.authenticate(base64.b64decode(secret["data"]["token"]).decode())
        created_pod = next(o for o in cluster.created if o["kind"] == "Pod")
        env = {e["name"]: e["value"] for e in created_pod["spec"]["containers"][0]["env"]}
        assert env["ROUNDTABLE_CAPABILITY_URL"] == _URL
        assert created_pod["metadata"]["labels"]["roundtable.owner"] == supervisor._owner.name
        assert cluster.names("pods") == cluster.names("secrets") == []
    finally:
        store.close()


@pytest.mark.parametrize(
    ("section", "key"),
    [
        ('[supervisor]\nlauncher = "k8s"\n', "supervisor.launcher"),
        ('[kubernetes]\nnamespace = "Not_A_Name"\n', "kubernetes.namespace"),
        ('[kubernetes]\nephemeral_storage = "lots"\n', "kubernetes.ephemeral_storage"),
        ('[kubernetes]\nimage_pull_policy = "Sometimes"\n', "kubernetes.image_pull_policy"),
        ("[kubernetes]\nsupervisor_selector = {}\n", "kubernetes.supervisor_selector"),
        ('[kubernetes]\nsupervisor_selector = { app = "" }\n', "kubernetes.supervisor_selector"),
        ('[kubernetes]\ncapability_ip = "roundtable-supervisor"\n', "kubernetes.capability_ip"),
        (
            '[supervisor]\nlauncher = "kubernetes"\n[kubernetes]\ncapability_url = "http://x:80"\n',
            "kubernetes.capability_url",
        ),
    ],
)
def test_a_bad_kubernetes_setting_names_its_key(tmp_path: Path, section: str, key: str) -> None:
    path = tmp_path / "config.toml"
    path.write_text(section, encoding="utf-8")
    with pytest.raises(InvalidArgument, match=key.replace(".", r"\.")):
        load_config(path)


def test_docker_stays_the_default_launcher(tmp_path: Path) -> None:
    config = load_config(tmp_path / "missing.toml")
    assert config.supervisor.launcher == "docker"
    assert config.kubernetes.namespace == "roundtable"


@pytest.mark.parametrize("content", [None, "not: [a, kubeconfig", "apiVersion: v1\nkind: Config\n"])
def test_an_unusable_kubeconfig_is_a_launch_error(tmp_path: Path, content: str | None) -> None:
    path = tmp_path / "kubeconfig"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    config = KubernetesConfig(capability_url=_URL, kubeconfig=str(path))
    with pytest.raises(LaunchFailed, match="no usable Kubernetes configuration"):
        api_client(config)


def test_the_kubernetes_client_is_imported_only_for_its_launcher() -> None:
    code = (
        "import sys; import supervisor._supervisor, supervisor._launchers; "
        "print(sorted(m for m in sys.modules if m == 'kubernetes' or m.startswith('kubernetes.')))"
    )
    root = Path(__file__).resolve().parents[3]
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
    )  # fmt: skip
    assert done.stdout.strip() == "[]"
