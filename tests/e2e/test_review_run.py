"""Review rounds that run, end to end, with the real Docker engine and the real role image.

A git project with one test; two configured reviewers, the embedded test reviewer (reviewer-1)
and the example bring-your-own agent (reviewer-2, through its mcp.json); the MemoryOracle with the
default judge provider. A patch that breaks the test (and adds a TODO, and builds SQL by hand
against a recorded decision) ends with revise votes that quote the failure, the oracle's warning,
and no consensus; a clean patch is approved by both, with consensus. One reviewer's crash,
timeout or OOM leaves the others running, every grant revoked and no container behind.
"""

from __future__ import annotations

import json
import os
import secrets
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import pytest

from store import ProjectPaths, Store, open_store
from supervisor._supervisor import Supervisor
from supervisor.launch import LABEL_SUPERVISOR, LaunchSpec, supervisor_id_for
from supervisor.review import run_review
from tests.conftest import REPO_ROOT
from tests.e2e.conftest import operator_call

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

_PYTHON = "/opt/roundtable/venv/bin/python"
_USERS = 'def find_user(db, name):\n    return db.query_builder.select("users").where(name=name).one()\n'
_TEST = """\
from app.users import find_user


class Builder:
    def select(self, table):
        self.table = table
        return self

    def where(self, **bound):
        self.bound = bound
        return self

    def one(self):
        return {"table": self.table, **self.bound}


class Db:
    query_builder = Builder()


def test_find_user_binds_the_name():
    assert find_user(Db(), "ann") == {"table": "users", "name": "ann"}
"""
BREAKING = """\
--- a/app/users.py
+++ b/app/users.py
@@ -1,2 +1,5 @@
 def find_user(db, name):
-    return db.query_builder.select("users").where(name=name).one()
+    # TODO: bind the name
+    cursor = db.connection.cursor()
+    cursor.execute(f"SELECT * FROM users WHERE name = '{name}'")
+    return cursor.fetchone()
"""
CLEAN = """\
--- a/app/users.py
+++ b/app/users.py
@@ -1,2 +1,3 @@
 def find_user(db, name):
+    \"\"\"The user called ``name``, looked up through the query builder.\"\"\"
     return db.query_builder.select("users").where(name=name).one()
"""


def _git(root: Path, *argv: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@x", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@x"}  # fmt: skip
    subprocess.run(["git", *argv], cwd=root, check=True, env=env, capture_output=True)


@pytest.fixture(scope="module")
def example_image(docker_sdk: Any) -> Iterator[str]:
    """The example agent image, on the role image of this checkout."""
    from supervisor.image import build_example_agent_image, build_role_image

    role = build_role_image(offline=True, progress=lambda line: None, repo_root=REPO_ROOT)
    tag = f"roundtable-example-agent:e2e-{secrets.token_hex(4)}"
    build_example_agent_image(docker_sdk, role_image=role.image_id, tag=tag, repo_root=REPO_ROOT)
    try:
        yield tag
    finally:
        docker_sdk.images.remove(tag, force=True)


@pytest.fixture
def reviewed(project: ProjectPaths, example_image: str, role_image_tag: str) -> Iterator[Store]:
    """The project as a git work tree with a test, two configured reviewers, and a decision."""
    root = project.root
    (root / "app").mkdir()
    (root / "app" / "users.py").write_text(_USERS)
    (root / "tests").mkdir()
    (root / "tests" / "test_users.py").write_text(_TEST)
    (root / ".gitignore").write_text(".roundtable/\n")
    _git(root, "init", "-q")
    _git(root, "add", "app", "tests", ".gitignore")
    _git(root, "commit", "-qm", "seed")
    with project.config_file.open("a") as config:
        config.write(
            '\n[launches."reviewer-1"]\nkind = "test"\n'
            'command = ["python", "-m", "pytest", "-q", "-p", "no:cacheprovider"]\ntimeout_seconds = 120\n'
            f'\n[launches."reviewer-2"]\nkind = "mcp"\nimage = "{example_image}"\ntimeout_seconds = 120\n'
        )
    store = open_store(project)
    try:
        yield store
    finally:
        store.close()


async def _proposal(store: Store, patch: str) -> str:
    decision = {
        "scope": "project",
        "kind": "decision",
        "title": "All SQL goes through the query builder",
        "body_md": "Never build SQL strings by hand: use db.query_builder so every value is bound.",
    }
    await operator_call(store, "memory.record", decision)
    task = await operator_call(store, "task.create", {"title": "Look users up by name"})
    created = await operator_call(
        store,
        "proposal.create",
        {"task_id": task["task"]["id"], "agent_id": "implementer-1", "title": "users", "patch": patch},
    )
    return str(created["proposal"]["id"])


def _left(store: Store, docker_sdk: Any) -> tuple[list[Any], list[sqlite3.Row]]:
    label = f"{LABEL_SUPERVISOR}={supervisor_id_for(store.paths.root)}"
    containers = docker_sdk.containers.list(all=True, filters={"label": label})
    live = store.db.read(
        lambda conn: conn.execute("SELECT id FROM capability_grants WHERE revoked_at IS NULL").fetchall()
    )
    return containers, live


def _votes(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {vote["agent_id"]: vote for vote in body["votes"]}


async def test_a_breaking_patch_gets_revise_votes_quoting_the_failure_and_no_consensus(
    reviewed: Store, docker_sdk: Any
) -> None:
    proposal_id = await _proposal(reviewed, BREAKING)
    # The operator's command, as a user runs it: the CLI, waiting, JSON out.
    command = [sys.executable, "-m", "supervisor", "review", "run", proposal_id, "--wait", "--json",
               "--root", str(reviewed.paths.root)]  # fmt: skip
    with anyio.fail_after(400):
        done = await anyio.run_process(command, check=False)
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    body = json.loads(done.stdout)["review"]
    progress = done.stderr.decode()
    assert "requested" in progress and "done" in progress
    launches = {launch["agent_id"]: launch for launch in body["launches"]}
    assert set(launches) == {"memory-oracle-1", "reviewer-1", "reviewer-2"}
    assert all(launch["launch"]["status"] == "exited" for launch in launches.values()), launches
    votes = _votes(body)
    assert votes["reviewer-1"]["vote"] == "revise"
    assert "AttributeError" in votes["reviewer-1"]["reason_md"]  # the failure, quoted
    assert "connection" in votes["reviewer-1"]["reason_md"]
    assert votes["reviewer-2"]["vote"] == "revise" and "TODO" in votes["reviewer-2"]["reason_md"]
    assert body["warnings"], "the oracle warned about the hand-built SQL"
    assert body["consensus"]["reached"] is False
    assert _left(reviewed, docker_sdk) == ([], [])
    # The timeline shows each vote beside the launch that cast it.
    timeline = reviewed.timeline.timeline(proposal_id)
    cast = [event for event in timeline["events"] if event["type"] == "vote.cast"]
    assert {event["launch"]["provider"] for event in cast} == {"test", "mcp"}
    assert all(event["launch"]["status"] == "exited" for event in cast)


async def test_a_clean_patch_is_approved_with_consensus(reviewed: Store, docker_sdk: Any) -> None:
    proposal_id = await _proposal(reviewed, CLEAN)
    async with Supervisor(reviewed) as supervisor:
        with anyio.fail_after(400):
            run = await run_review(supervisor, proposal_id)
    body = run.to_dict()
    votes = _votes(body)
    assert votes["reviewer-1"]["vote"] == "approve", votes["reviewer-1"]
    assert "passed" in votes["reviewer-1"]["reason_md"] or "exit code 0" in votes["reviewer-1"]["reason_md"]
    assert votes["reviewer-2"]["vote"] == "approve"
    assert body["consensus"]["reached"] is True
    assert reviewed.proposals.get(proposal_id)["status"] == "accepted"
    assert _left(reviewed, docker_sdk) == ([], [])


def _fault(kind: str) -> Any:
    """A spec transform that breaks reviewer-2's container (and only it) in one way."""
    programs = {
        "crash": "import sys; sys.exit(3)",
        "timeout": "import time\nwhile True: time.sleep(60)",
        "oom": "x = []\nwhile True: x.append(bytearray(8 * 1024 * 1024))",
    }

    def transform(spec: LaunchSpec) -> LaunchSpec:
        if spec.environment.get("ROUNDTABLE_AGENT_ID") != "reviewer-2":
            return spec
        broken = replace(spec, entrypoint=(_PYTHON, "-c", programs[kind]), command=())
        return replace(broken, timeout_seconds=8.0) if kind == "timeout" else broken

    return transform


@pytest.mark.parametrize(
    ("fault", "status"), [("crash", "failed"), ("timeout", "timeout"), ("oom", "failed")]
)
async def test_one_reviewers_failure_leaves_the_others_running(
    reviewed: Store, docker_sdk: Any, fault: str, status: str
) -> None:
    proposal_id = await _proposal(reviewed, CLEAN)
    async with Supervisor(reviewed, spec_transform=_fault(fault)) as supervisor:
        with anyio.fail_after(400):
            run = await run_review(supervisor, proposal_id)
    launches = {launch.agent_id: launch for launch in run.launches}
    assert launches["reviewer-2"].launch is not None
    assert launches["reviewer-2"].launch["status"] == status, launches["reviewer-2"].launch
    assert launches["reviewer-1"].launch is not None and launches["reviewer-1"].launch["status"] == "exited"
    assert launches["memory-oracle-1"].launch is not None
    assert launches["memory-oracle-1"].launch["status"] == "exited"
    assert {vote["agent_id"] for vote in run.votes} == {"reviewer-1"}  # the broken one never voted
    assert _left(reviewed, docker_sdk) == ([], [])


async def test_cancelling_a_round_cleans_up_every_launch(reviewed: Store, docker_sdk: Any) -> None:
    proposal_id = await _proposal(reviewed, CLEAN)

    def hang(spec: LaunchSpec) -> LaunchSpec:
        return replace(
            spec, entrypoint=(_PYTHON, "-c", "import time\nwhile True: time.sleep(60)"), command=()
        )

    running: list[str] = []
    all_running = anyio.Event()

    async def on_phase(phase: str, details: dict[str, Any]) -> None:
        if phase == "running":
            running.append(details["launch_id"])
            if len(running) == 3:  # every launch's container is up: now cancel the round
                all_running.set()

    async with Supervisor(reviewed, spec_transform=hang) as supervisor:
        with anyio.move_on_after(60) as scope:
            async with anyio.create_task_group() as group:
                group.start_soon(lambda: run_review(supervisor, proposal_id, on_phase=on_phase))
                with anyio.fail_after(120):
                    await all_running.wait()
                group.cancel_scope.cancel()
        assert not scope.cancelled_caught
    statuses = reviewed.db.read(lambda conn: [r[0] for r in conn.execute("SELECT status FROM role_launches")])
    assert sorted(statuses) == ["cancelled"] * 3
    assert _left(reviewed, docker_sdk) == ([], [])
