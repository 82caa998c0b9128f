"""Fixtures for end-to-end flows: a project with a decision, a task and a proposal under review."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from capabilities.services import Services
from store import ProjectPaths, Store, open_store
from supervisor.cli._demo import DEMO_PATCH
from supervisor.cli._project import operator_call as project_operator_call
from supervisor.launch._spec import LABEL_SUPERVISOR, supervisor_id_for

_ORIGINAL = 'def find_user(db, name):\n    return db.query_builder.select("users").where(name=name).one()\n'


@dataclass(frozen=True)
class ReviewScene:
    """What :func:`scene` set up."""

    paths: ProjectPaths
    decision_id: str
    unrelated_id: str
    task_id: str
    proposal_id: str


async def operator_call(store: Store, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """Call a tool as the local operator (a structured error fails the test)."""
    return await project_operator_call(Services(store=store), name, arguments)


@pytest.fixture
async def scene(project: ProjectPaths, store: Store) -> ReviewScene:
    """A decision against raw SQL, an unrelated decision, and a raw-SQL proposal under review."""
    (project.root / "app").mkdir()
    (project.root / "app" / "users.py").write_text(_ORIGINAL, encoding="utf-8")
    decision = await operator_call(
        store,
        "memory.record",
        {
            "scope": "project",
            "kind": "decision",
            "title": "All SQL goes through the query builder",
            "body_md": "Never build SQL strings by hand; use db.query_builder.",
        },
    )
    unrelated = await operator_call(
        store,
        "memory.record",
        {
            "scope": "project",
            "kind": "decision",
            "title": "Logs are structured JSON",
            "body_md": "Use structlog.",
        },
    )
    task = await operator_call(store, "task.create", {"title": "Look users up by name"})
    proposal = await operator_call(
        store,
        "proposal.create",
        {"task_id": task["task"]["id"], "agent_id": "implementer-1", "title": "Raw SQL", "patch": DEMO_PATCH},
    )
    proposal_id = proposal["proposal"]["id"]
    await operator_call(store, "proposal.request_review", {"proposal_id": proposal_id})
    return ReviewScene(
        project, decision["entry"]["id"], unrelated["entry"]["id"], task["task"]["id"], proposal_id
    )


@pytest.fixture(autouse=True)
def _no_container_of_this_project_survives(request: pytest.FixtureRequest) -> Iterator[None]:
    if request.node.get_closest_marker("docker") is None:
        yield
        return
    client = request.getfixturevalue("docker_sdk")
    paths: ProjectPaths = request.getfixturevalue("project")
    yield
    label = f"{LABEL_SUPERVISOR}={supervisor_id_for(paths.root)}"
    leftovers = client.containers.list(all=True, filters={"label": label})
    for container in leftovers:
        container.remove(force=True)
    assert not leftovers, f"containers survived the test: {[c.name for c in leftovers]}"


def reopen(paths: ProjectPaths) -> Store:
    """A second store on the same project (after config.toml changed)."""
    return open_store(paths)


def write_config(paths: ProjectPaths, replace: dict[str, str]) -> None:
    """Edit ``config.toml`` by replacing whole lines that start with a key."""
    lines = paths.config_file.read_text().splitlines()
    out = []
    section = ""
    for line in lines:
        if line.startswith("["):
            section = line.split("]")[0] + "]"
        key = line.split("=")[0].strip()
        target = replace.get(f"{section}{key}")
        out.append(f"{key} = {target}" if target is not None and "=" in line else line)
    Path(paths.config_file).write_text("\n".join(out) + "\n")
