"""A cold ``oracle launch --wait``, as a user runs it, imports none of the heavy stacks it does not use.

The launch socket is served by the lean server (h11), the engine is reached by the lean Engine API
client, and the model gateway's HTTP client is imported only by a launch that calls a model: so the
whole command, a new process from its first import to its answer, must never load the MCP SDK, its
types, Starlette, uvicorn, httpx, the docker SDK or requests. The command ends its process with
``os._exit`` once it has answered, so the modules are read from ``-X importtime``, which lists every
module the process imported as it imported it.
"""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import anyio
import pytest

from tests.e2e.conftest import ReviewScene

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

HEAVY = frozenset(
    {"mcp", "mcp_types", "starlette", "uvicorn", "sse_starlette", "httpx", "httpx2"}
    | {"docker", "requests", "urllib3"}
)


def _imported(stderr: str) -> set[str]:
    names = set()
    for line in stderr.splitlines():
        if line.startswith("import time:") and line.count("|") == 2:
            name = line.rsplit("|", 1)[1].strip()
            if name != "package":  # the header line
                names.add(name.split(".", 1)[0])
    return names


def _cold_launch(scene: ReviewScene) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-X", "importtime", "-m", "supervisor", "--root", str(scene.paths.root)]
    argv += ["oracle", "launch", scene.proposal_id, "--wait", "--json", "--timeout", "120"]
    return subprocess.run(argv, capture_output=True, text=True, timeout=180, check=False)


async def test_a_cold_launch_imports_no_heavy_stack(
    scene: ReviewScene, docker_sdk: Any, role_image_tag: str
) -> None:
    done = await anyio.to_thread.run_sync(_cold_launch, scene)
    assert done.returncode == 0, done.stderr[-4000:]
    assert '"status": "exited"' in done.stdout, done.stdout
    imported = _imported(done.stderr)
    assert {"store", "capabilities", "supervisor", "h11"} <= imported  # the check sees real imports
    assert not imported & HEAVY, sorted(imported & HEAVY)
