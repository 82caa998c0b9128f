"""Bring your own agent, for real: the example agent image, built on the role image, run hardened as a
launch by the DockerLauncher, votes through the bridge over the launch socket.

The runtime directory holds what a launch hands any agent: the socket (served here, bound to a
grant), the token file and ``mcp.json``. The agent knows only the standard MCP configuration; its
vote is recorded as the grant's agent, and no container is left behind.

The grant is the launched Reviewer capability (``issue_capability(role="reviewer")``) the
supervisor mints for a configured reviewer.
"""

from __future__ import annotations

import contextlib
import json
import secrets
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Any

import anyio
import docker.errors
import pytest

from capabilities.auth import issue_capability
from capabilities.policy import CAPABILITY_TOOLSETS
from capabilities.services import Services
from capabilities.serving import build_launch_app, serving
from store import Store
from store.launches._store import LaunchStatus
from supervisor.docker._launcher import DockerLauncher
from supervisor.image import build_example_agent_image, build_role_image, role_image_tag
from supervisor.launch import (
    LABEL_LAUNCH,
    MCP_CONFIG_FILE,
    ContainerOutcome,
    LaunchSpec,
    RuntimeRoot,
    client_environment,
    mcp_client_config,
)
from tests.conftest import REPO_ROOT

pytestmark = [pytest.mark.docker, pytest.mark.anyio]

REVIEWER_ROLE = "reviewer"
REVIEWER_AGENT = "reviewer-1"  # a Reviewer on the default roster, so a candidate of the round
REVIEWER_TOOLS = CAPABILITY_TOOLSETS[REVIEWER_ROLE]

CLEAN = """\
diff --git a/app/retry.py b/app/retry.py
--- a/app/retry.py
+++ b/app/retry.py
@@ -1,2 +1,3 @@
 def retry(call):
-    return call()
+    result = call()
+    return result
"""

UNFINISHED = """\
diff --git a/app/retry.py b/app/retry.py
--- a/app/retry.py
+++ b/app/retry.py
@@ -1,2 +1,3 @@
 def retry(call):
-    return call()
+    # TODO: back off between attempts
+    return call()
"""


@pytest.fixture(scope="module")
def example_image(docker_sdk: Any) -> Iterator[str]:
    """The example agent image, built on the role image of this checkout (rebuilt when stale)."""
    role = build_role_image(offline=True, progress=lambda line: None, repo_root=REPO_ROOT)
    tag = f"roundtable-example-agent:test-{secrets.token_hex(4)}"
    # FROM the role image's id, not its tag: another build may retag the role image meanwhile.
    build_example_agent_image(docker_sdk, role_image=role.image_id, tag=tag, repo_root=REPO_ROOT)
    try:
        yield tag
    finally:
        docker_sdk.images.remove(tag, force=True)


@dataclass(frozen=True)
class Review:
    """What one launch of the example agent did."""

    outcome: ContainerOutcome
    report: dict[str, Any]
    votes: list[dict[str, Any]]
    left: list[Any]


async def _review(
    store: Store, docker_sdk: Any, supervisor_id: str, runtime: RuntimeRoot, image: str, patch: str
) -> Review:
    task = store.tasks.create(title="Retries", actor="op")
    proposal, _ = store.proposals.create(
        task_id=task.id, agent_id="implementer-1", title="Retry once", patch=patch, actor="implementer-1"
    )
    proposal_id = proposal["id"]
    store.reviews.request_review(proposal_id=proposal_id, actor="op")
    launch = store.launches.request(
        role=REVIEWER_ROLE, agent_id=REVIEWER_AGENT, proposal_id=proposal_id, image=image
    )
    issued = issue_capability(
        store,
        proposal_id=proposal_id,
        role=REVIEWER_ROLE,
        agent_id=REVIEWER_AGENT,
        ttl_seconds=600,
        actor="op",
        launch_id=launch.id,
    )
    rundir = runtime.create(launch.id)
    rundir.write_token_file(issued.token)
    rundir.write_file(MCP_CONFIG_FILE, json.dumps(mcp_client_config()).encode())
    environment = client_environment()
    spec = LaunchSpec(
        launch_id=launch.id,
        role=REVIEWER_ROLE,
        proposal_id=proposal_id,
        image=image,
        environment=environment,
        runtime_dir=rundir.path,
        timeout_seconds=120,
        redact=frozenset({issued.token}),
    )
    launcher = DockerLauncher(store.launches, supervisor_id=supervisor_id, runtime=runtime)
    try:
        app = build_launch_app(Services(store=store), issued.record.id)
        with anyio.fail_after(180):
            async with serving(app, uds=rundir.socket_path):
                rundir.grant_socket()
                outcome = await launcher.run(spec)
    finally:
        await launcher.aclose()
        rundir.remove()
    votes, _ = store.reviews.list(proposal_id=proposal_id)
    lines = outcome.log_tail.strip().splitlines()
    assert issued.token not in outcome.log_tail
    return Review(
        outcome=outcome,
        report=json.loads(lines[-1]) if lines and lines[-1].startswith("{") else {},
        votes=[vote.to_dict() for vote in votes],
        left=list(docker_sdk.containers.list(all=True, filters={"label": f"{LABEL_LAUNCH}={launch.id}"})),
    )


async def test_the_example_agent_approves_a_clean_patch(
    store: Store, docker_sdk: Any, supervisor_id: str, runtime_root: RuntimeRoot, example_image: str
) -> None:
    review = await _review(store, docker_sdk, supervisor_id, runtime_root, example_image, CLEAN)
    outcome = review.outcome
    assert (outcome.status, outcome.exit_code) == (LaunchStatus.EXITED, 0), outcome.log_tail
    assert review.report["tools"] == sorted(REVIEWER_TOOLS)
    assert (review.report["vote"], review.report["flagged"]) == ("approve", [])
    [vote] = review.votes
    assert (vote["agent_id"], vote["vote"], vote["id"]) == (
        REVIEWER_AGENT,
        "approve",
        review.report["vote_id"],
    )
    assert review.left == []


async def test_the_example_agent_asks_to_revise_a_patch_that_adds_a_todo(
    store: Store, docker_sdk: Any, supervisor_id: str, runtime_root: RuntimeRoot, example_image: str
) -> None:
    review = await _review(store, docker_sdk, supervisor_id, runtime_root, example_image, UNFINISHED)
    outcome = review.outcome
    assert (outcome.status, outcome.exit_code) == (LaunchStatus.EXITED, 0), outcome.log_tail
    assert (review.report["vote"], review.report["flagged"]) == ("revise", ["app/retry.py:2"])
    [vote] = review.votes
    assert (vote["agent_id"], vote["vote"]) == (REVIEWER_AGENT, "revise")
    assert "`app/retry.py:2`: `# TODO: back off between attempts`" in vote["reason_md"]
    assert review.left == []


def test_the_example_image_is_labelled_and_runs_as_the_role_user(docker_sdk: Any, example_image: str) -> None:
    config = docker_sdk.images.get(example_image).attrs["Config"]
    assert config["User"] == "10001:10001"
    assert config["Entrypoint"] == ["/opt/roundtable/venv/bin/python", "/opt/roundtable/agent/agent.py"]
    labels = config["Labels"]
    assert labels["org.opencontainers.image.title"] == "roundtable-example-agent"
    assert (labels["roundtable.example-agent"], labels["roundtable.role-image"]) == ("1", "")
    assert labels["org.opencontainers.image.base.name"].startswith("sha256:")
    assert len(labels["roundtable.source-hash"]) == 64


def test_the_cli_builds_the_example_image_on_the_role_image(
    docker_sdk: Any, example_image: str, roundtable_argv: list[str], tmp_path: Path
) -> None:
    tag = f"roundtable-example-agent:test-cli-{secrets.token_hex(4)}"
    argv = [*roundtable_argv, "image", "build-example", "--tag", tag, "--json"]
    done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False)
    try:
        assert done.returncode == 0, done.stderr
        built = json.loads(done.stdout)["image"]
        image = docker_sdk.images.get(tag)
        assert (built["tag"], built["id"]) == (tag, image.id)
        labels = image.attrs["Config"]["Labels"]
        assert labels["org.opencontainers.image.base.name"] == role_image_tag()
        assert labels["org.opencontainers.image.version"] == version("roundtable")
    finally:
        with contextlib.suppress(docker.errors.ImageNotFound):
            docker_sdk.images.remove(tag, force=True)
