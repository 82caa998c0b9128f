"""The built role image (real Docker): what it holds, how it runs, its labels, its no-op rebuild.

The ``docker`` tests build (or reuse) ``roundtable-role:<version>`` once per session through the
offline path and inspect it with the real engine. They fail, never skip, when Docker is unreachable.
"""

from __future__ import annotations

import gc
import json
import subprocess
import sys
import time
import warnings
from collections.abc import Iterator
from importlib.metadata import version
from pathlib import Path
from typing import Any

import docker
import docker.errors
import pytest

from supervisor.image._build import (
    LABEL_REVISION,
    LABEL_SOURCE_HASH,
    LABEL_VERSION,
    DockerUnavailableError,
    ImageBuildResult,
    build_role_image,
    inspect_role_image,
)

REPO_ROOT = Path(__file__).resolve().parents[3]
TEST_LABEL = "roundtable.test"
TEST_LABEL_VALUE = "test_image"
ROLE_USER = "10001:10001"
VENV_PYTHON = "/opt/roundtable/venv/bin/python"
# What the role image must not carry: the supervisor side of Roundtable and its server stack.
NOT_IN_THE_IMAGE = ("supervisor", "store", "capabilities", "docker", "uvicorn", "requests", "tests")


# -- the built image (real Docker) --------------------------------------------------------------------


@pytest.fixture(scope="session")
def image_client() -> Iterator[Any]:
    """A Docker client; the test fails (not skips) when the engine is unreachable."""
    try:
        client = docker.from_env()
        client.ping()
    except (docker.errors.DockerException, OSError) as exc:
        reason = str(exc)
    else:
        reason = ""
    if reason:
        # The failed client's socket is only reachable by the collector: close it now, quietly.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ResourceWarning)
            gc.collect()
        pytest.fail(f"the Docker engine is unreachable ({reason}); the docker tests need it", pytrace=False)
    try:
        yield client
    finally:
        for container in client.containers.list(all=True, filters={"label": TEST_LABEL}):
            container.remove(force=True)
        client.close()


@pytest.fixture(scope="session")
def role_image(image_client: Any) -> ImageBuildResult:
    """The role image, built once per session through the offline path (or reused)."""
    lines: list[str] = []
    try:
        return build_role_image(offline=True, progress=lines.append, repo_root=REPO_ROOT)
    except DockerUnavailableError as exc:
        pytest.fail(f"the Docker engine is unreachable: {exc}", pytrace=False)


def _run(client: Any, image: ImageBuildResult, command: list[str], **options: Any) -> bytes:
    """Run the image hardened as a role launch is, and return its stdout; never leaves a container."""
    output: bytes = client.containers.run(
        image.tag,
        command,
        remove=True,
        network_disabled=True,
        read_only=True,
        user=ROLE_USER,
        cap_drop=["ALL"],
        security_opt=["no-new-privileges:true"],
        tmpfs={"/tmp": "rw,noexec,nosuid,nodev,size=64m"},
        labels={TEST_LABEL: TEST_LABEL_VALUE},
        **options,
    )
    return output


@pytest.mark.docker
def test_image_is_tagged_and_runs_as_the_role_user(image_client: Any, role_image: ImageBuildResult) -> None:
    image = image_client.images.get(role_image.tag)
    assert image.id == role_image.image_id
    assert role_image.tag in image.tags
    config = image.attrs["Config"]
    assert config["User"] == ROLE_USER
    assert config["WorkingDir"] == "/tmp"
    assert config["Entrypoint"] == ["/opt/roundtable/venv/bin/python", "-m", "roles.runner"]
    assert "PYTHONDONTWRITEBYTECODE=1" in config["Env"]


@pytest.mark.docker
def test_image_labels_carry_version_revision_and_source_hash(role_image: ImageBuildResult) -> None:
    status = inspect_role_image(role_image.tag)
    assert status is not None
    assert status.image_id == role_image.image_id
    assert status.labels["roundtable.role-image"] == "1"
    assert status.labels[LABEL_VERSION] == version("roundtable") == status.version
    assert status.labels[LABEL_REVISION]
    assert status.source_hash == status.labels[LABEL_SOURCE_HASH]
    assert len(status.labels[LABEL_SOURCE_HASH]) == 64
    assert status.age_seconds >= 0
    assert status.size_bytes > 0


@pytest.mark.docker
def test_image_prints_its_version_under_the_launch_hardening(
    image_client: Any, role_image: ImageBuildResult
) -> None:
    output = _run(image_client, role_image, ["--version"])
    assert output.decode().strip() == f"roundtable-role {version('roundtable')}"


@pytest.mark.docker
def test_runner_without_a_channel_exits_2(image_client: Any, role_image: ImageBuildResult) -> None:
    with pytest.raises(docker.errors.ContainerError) as failure:
        _run(image_client, role_image, [])
    assert failure.value.exit_status == 2
    assert b"no launch channel" in (failure.value.stderr or b"")


@pytest.mark.docker
def test_role_user_cannot_change_the_installed_code(image_client: Any, role_image: ImageBuildResult) -> None:
    probe = (
        "import os, roles.runner, sys\n"
        "print(os.getuid(), os.getgid())\n"
        "writable = [p for p in ('/opt/roundtable/venv', os.path.dirname(roles.runner.__file__))"
        " if os.access(p, os.W_OK)]\n"
        "print('writable:', writable)\n"
    )
    # Not read-only here: ownership alone must already keep the role user out of the venv.
    output = image_client.containers.run(
        role_image.tag,
        ["-c", probe],
        entrypoint=["/opt/roundtable/venv/bin/python"],
        remove=True,
        network_disabled=True,
        labels={TEST_LABEL: TEST_LABEL_VALUE},
    )
    assert output.decode().splitlines() == ["10001 10001", "writable: []"]


_CONTENTS_PROBE = r"""
import importlib, importlib.metadata, json, pkgutil, sys, sysconfig
from pathlib import Path
import roles, roles.runner
for module in pkgutil.walk_packages(roles.__path__, "roles."):
    importlib.import_module(module.name)
failed = {}
for name in sys.argv[1:]:
    try:
        importlib.import_module(name)
    except ModuleNotFoundError as exc:
        failed[name] = exc.name
site = Path(sysconfig.get_path("purelib"))
package = Path(roles.__file__).parent
print(json.dumps({
    "not_importable": failed,
    "distributions": sorted(d.metadata["Name"].lower() for d in importlib.metadata.distributions()),
    "roles_files": sorted(
        p.relative_to(package).as_posix() for p in package.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    ),
    "roles_without_bytecode": sorted(
        p.relative_to(package).as_posix() for p in package.rglob("*.py")
        if not Path(importlib.util.cache_from_source(str(p))).is_file()
    ),
    # PEP 552 flags of each .pyc: 1 is hash-based and never checked against the source.
    "bytecode_flags": sorted({
        int.from_bytes(p.read_bytes()[4:8], "little") for p in site.rglob("__pycache__/*.pyc")
    }),
    "site": str(site),
}))
"""


def _contents(client: Any, image: ImageBuildResult) -> dict[str, Any]:
    output = _run(client, image, ["-c", _CONTENTS_PROBE, *NOT_IN_THE_IMAGE], entrypoint=[VENV_PYTHON])
    result: dict[str, Any] = json.loads(output)
    return result


@pytest.mark.docker
def test_image_carries_only_the_runner(image_client: Any, role_image: ImageBuildResult) -> None:
    """roles.runner imports; nothing of the supervisor side (our packages, Docker SDK, uvicorn) does."""
    contents = _contents(image_client, role_image)
    assert contents["not_importable"] == {name: name for name in NOT_IN_THE_IMAGE}
    distributions = set(contents["distributions"])
    assert "roundtable-role" in distributions
    assert {"mcp", "httpx2", "anyio", "pydantic"} <= distributions
    assert distributions.isdisjoint({"roundtable", "docker", "uvicorn", "requests", "click", "pip"})


@pytest.mark.docker
def test_image_carries_every_file_of_roles(image_client: Any, role_image: ImageBuildResult) -> None:
    """All of roles/, subpackages included: the build names no module."""
    package = REPO_ROOT / "roles"
    expected = sorted(
        p.relative_to(package).as_posix()
        for p in package.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
    )
    assert _contents(image_client, role_image)["roles_files"] == expected


@pytest.mark.docker
def test_bytecode_is_compiled_at_build_time(image_client: Any, role_image: ImageBuildResult) -> None:
    """Every module the runner loads comes from bytecode built into the (read-only) image."""
    contents = _contents(image_client, role_image)
    assert contents["roles_without_bytecode"] == []
    assert contents["bytecode_flags"] == [1]
    probe = "import roles.runner, roles.gateway, roles.tools, mcp.client.streamable_http\nimport mcp"
    # -v logs on stderr; exit 3 afterwards so that docker hands stderr back.
    argv = ["-v", "-c", f"{probe}\nraise SystemExit(3)"]
    with pytest.raises(docker.errors.ContainerError) as verbose:
        _run(image_client, role_image, argv, entrypoint=[VENV_PYTHON])
    log = (verbose.value.stderr or b"").decode()
    loaded = [line.split("'")[1] for line in log.splitlines() if line.startswith("# code object from '")]
    ours = [path for path in loaded if path.startswith("/opt/roundtable/venv/")]
    assert any("/roles/__pycache__/runner." in path for path in ours)
    assert any("/mcp/client/__pycache__/streamable_http." in path for path in ours)
    assert [path for path in ours if not path.endswith(".pyc")] == []


@pytest.mark.docker
def test_second_build_is_a_quick_no_op(role_image: ImageBuildResult) -> None:
    lines: list[str] = []
    started = time.monotonic()
    again = build_role_image(offline=True, progress=lines.append, repo_root=REPO_ROOT)
    assert again.built is False
    assert again.image_id == role_image.image_id
    assert any("up to date" in line for line in lines)
    # Generous: the no-op path hashes the sources and asks Docker twice (about 20 ms here).
    assert time.monotonic() - started < 10


@pytest.mark.docker
def test_tests_leave_no_container_behind(image_client: Any, role_image: ImageBuildResult) -> None:
    _run(image_client, role_image, ["--version"])
    assert image_client.containers.list(all=True, filters={"label": TEST_LABEL}) == []


@pytest.mark.docker
def test_doctor_reports_every_check(role_image: ImageBuildResult, tmp_path: Path) -> None:
    """``roundtable doctor`` checks the engine, the image, the runtime directory and the database."""
    roundtable = [sys.executable, "-m", "supervisor"]
    subprocess.run([*roundtable, "init", "--root", str(tmp_path)], check=True, capture_output=True)
    result = subprocess.run(
        [*roundtable, "doctor", "--root", str(tmp_path), "--json"],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    body = json.loads(result.stdout)
    assert result.returncode == 0, body
    assert [check["name"] for check in body["checks"]] == ["docker", "role image", "runtime dir", "database"]
    assert all(check["ok"] for check in body["checks"]), body
