"""The test reviewer in the real role image: a hardened launch through ``DockerLauncher`` whose runtime
directory holds the staged workspace, its manifest, the token and a live MCP socket bound to a
Reviewer grant. pytest runs inside the container (read-only root, no network, ``/tmp`` noexec) and the
vote lands in the store: ``revise`` quoting the failure, or ``approve``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from capabilities.services import Services
from capabilities.serving._transports import build_launch_app, serving
from store import Store
from store.launches._store import LaunchStatus
from supervisor.docker._launcher import DockerLauncher
from supervisor.launch._runtime_dir import CONTAINER_MOUNT, RuntimeRoot
from supervisor.launch._spec import ContainerOutcome, LaunchLimits, LaunchSpec
from supervisor.review import REVIEW_MANIFEST, WORKSPACE_TAR
from tests.roles.test_test_reviewer import (
    APP,
    FAILING,
    PASSING,
    REVIEWER_TOOLS,
    TESTS,
    _proposal,
    _stage,
)
from tests.supervisor.review.test_workspace import make_repo

pytestmark = [pytest.mark.docker, pytest.mark.anyio]

ENTRYPOINT = ("/opt/roundtable/venv/bin/python", "-m", "roles.test_reviewer")
COMMAND = ("python", "-m", "pytest", "-q")  # the image's python, which carries pytest
LIMITS = LaunchLimits(memory_bytes=256 * 1024**2, cpus=1.0, pids=64, nofile=256)


async def _review_in_container(
    store: Store, runtime: RuntimeRoot, supervisor_id: str, image: str, repo: Path, patch: str
) -> tuple[ContainerOutcome, list[dict[str, Any]]]:
    proposal_id = _proposal(store, patch)
    staged = _stage(store, repo, proposal_id, COMMAND, 60)
    launch = store.launches.request(
        role="reviewer", agent_id="reviewer-1", proposal_id=proposal_id, image=image
    )
    issued = store.grants.mint_grant(
        proposal_id=proposal_id, role="Reviewer", agent_id="reviewer-1", tools=REVIEWER_TOOLS,
        ttl_seconds=600, actor="op", launch_id=launch.id,
    )  # fmt: skip
    rundir = runtime.create(launch.id)
    try:
        rundir.write_token_file(issued.token)
        rundir.write_file(REVIEW_MANIFEST, staged.manifest_json())
        rundir.write_file(WORKSPACE_TAR, staged.tar)
        spec = LaunchSpec(
            launch_id=launch.id, role=launch.role, proposal_id=proposal_id, image=image,
            entrypoint=ENTRYPOINT, runtime_dir=rundir.path, limits=LIMITS, timeout_seconds=180,
            environment={"ROUNDTABLE_CHANNEL_DIR": CONTAINER_MOUNT,
                         "ROUNDTABLE_PROPOSAL_ID": proposal_id, "ROUNDTABLE_AGENT_ID": "reviewer-1"},
            redact=frozenset({issued.token}),
        )  # fmt: skip
        launcher = DockerLauncher(store.launches, supervisor_id=supervisor_id, runtime=runtime)
        app = build_launch_app(Services(store=store), issued.record.id)
        try:
            async with serving(app, uds=rundir.socket_path):
                rundir.grant_socket()
                with anyio.fail_after(240):
                    outcome = await launcher.run(spec)
        finally:
            await launcher.aclose()
            store.grants.revoke(issued.record.id, actor="op")
    finally:
        rundir.remove()
    votes, _ = store.reviews.list(proposal_id=proposal_id)
    return outcome, [vote.to_dict() for vote in votes]


async def test_in_the_role_image_a_failing_test_is_revise_and_a_passing_one_approve(
    store: Store, tmp_path: Path, runtime_root: RuntimeRoot, supervisor_id: str, role_image_tag: str
) -> None:
    repo = make_repo(tmp_path / "repo", {"app.py": APP, "tests/test_app.py": TESTS})

    failed, votes = await _review_in_container(
        store, runtime_root, supervisor_id, role_image_tag, repo, FAILING
    )
    assert (failed.status, failed.exit_code) == (LaunchStatus.EXITED, 0), failed.log_tail
    assert '"vote": "revise"' in failed.log_tail and '"exit_code": 1' in failed.log_tail
    [revise] = votes
    assert (revise["agent_id"], revise["vote"], revise["patch_version"]) == ("reviewer-1", "revise", 1)
    reason = revise["reason_md"]
    assert reason.startswith("**Failed.** `python -m pytest -q` exited 1 on patch version 1")
    assert "FAILED tests/test_app.py::test_add - assert 0 == 4" in reason
    assert "1 failed, 1 passed" in reason  # the environment test passed inside the container too

    passed, votes = await _review_in_container(
        store, runtime_root, supervisor_id, role_image_tag, repo, PASSING
    )
    assert (passed.status, passed.exit_code) == (LaunchStatus.EXITED, 0), passed.log_tail
    [approve] = votes
    assert (approve["vote"], approve["patch_version"]) == ("approve", 1)
    assert "2 passed" in approve["reason_md"]
