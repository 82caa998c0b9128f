"""The hot path never imports the docker SDK: not ``import supervisor.docker``, not a whole launch.

Each check runs in a fresh interpreter (this one has imported the SDK long ago) and reports which of
``docker``, ``requests`` and ``urllib3`` ended up in ``sys.modules``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
SDK_MODULES = ("docker", "requests", "urllib3")

_REPORT = f"import json, sys; print(json.dumps([m for m in {SDK_MODULES!r} if m in sys.modules]))"

_LAUNCH = """
import sys, tempfile
from pathlib import Path
import anyio
from store import init_project, open_store
from supervisor.docker import DockerLauncher
from supervisor.launch._runtime_dir import RuntimeRoot
from supervisor.launch._spec import LaunchSpec

async def main(tmp):
    paths, _ = init_project(Path(tmp) / "proj")
    store = open_store(paths)
    runtime = RuntimeRoot(sys.argv[1], base=Path(tmp) / "rt")
    launcher = DockerLauncher(store.launches, supervisor_id=sys.argv[1], runtime=runtime)
    record = await store.db.run(
        store.launches.request, role="memory_oracle", agent_id="t", proposal_id="P-1", image=sys.argv[2]
    )
    rundir = runtime.create(record.id)
    rundir.write_token_file("test-token")
    spec = LaunchSpec(launch_id=record.id, role=record.role, proposal_id="P-1", image=sys.argv[2],
                      command=("--version",), runtime_dir=rundir.path, timeout_seconds=60)
    try:
        outcome = await launcher.run(spec)
    finally:
        await launcher.aclose()
        rundir.remove()
        store.close()
    assert outcome.exit_code == 0, outcome.to_dict()

with tempfile.TemporaryDirectory(prefix="rt-imp-", dir="/tmp") as tmp:
    anyio.run(main, tmp)
"""


def _sdk_modules_after(code: str, *args: str) -> list[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("DOCKER_HOST", None)
    result = subprocess.run(
        [sys.executable, "-c", code + "\n" + _REPORT, *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return list(json.loads(result.stdout.strip().splitlines()[-1]))


def test_importing_the_docker_package_imports_no_sdk() -> None:
    assert _sdk_modules_after("import supervisor.docker, supervisor.launch") == []


def test_the_report_sees_the_sdk_when_it_is_imported() -> None:
    assert _sdk_modules_after("import supervisor.docker._sdk") == list(SDK_MODULES)


@pytest.mark.docker
def test_a_whole_launch_imports_no_sdk(supervisor_id: str, role_image_tag: str) -> None:
    assert _sdk_modules_after(_LAUNCH, supervisor_id, role_image_tag) == []
