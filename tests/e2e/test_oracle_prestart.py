"""A cold ``oracle launch --wait``'s prestarted container, on the real engine and through the real CLI.

The first cold launch of a project records a recipe; the next one starts its container from it
before the command has loaded the store, and its one-shot pool adopts that container only when the
real configuration would create exactly it. Each test also checks that nothing is left behind: no
container of the project, no slot directory, no owner lock.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import stat
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from store import ProjectPaths, Store, init_project, open_store
from supervisor.cli._demo import DEMO_PATCH
from supervisor.docker._prestart import config_digest, recipe_path, shared_recipe_path
from supervisor.launch import LABEL_SUPERVISOR, RuntimeRoot, owner_directory, supervisor_id_for
from tests.e2e.conftest import ReviewScene, operator_call

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

_REPO = Path(__file__).resolve().parents[2]


def _launch(scene: ReviewScene, *extra: str) -> tuple[subprocess.CompletedProcess[str], list[dict[str, Any]]]:
    """``roundtable oracle launch P --wait --json`` as a user runs it, with its debug log lines."""
    env = {**os.environ, "PYTHONPATH": str(_REPO), "PYTHONSAFEPATH": "1", "ROUNDTABLE_LOG_LEVEL": "DEBUG"}
    done = subprocess.run(
        [sys.executable, "-m", "supervisor", "oracle", "launch", *extra, "--wait", "--json",
         "--root", str(scene.paths.root)],
        capture_output=True, text=True, env=env, timeout=180, check=False,
    )  # fmt: skip
    events = []
    for line in done.stderr.splitlines():
        if line.startswith("{"):
            event = json.loads(line)
            if isinstance(event, dict) and "event" in event:
                events.append(event)
    return done, events


def _named(events: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    return [event for event in events if event["event"] == name]


def _runtime(paths: ProjectPaths) -> RuntimeRoot:
    return RuntimeRoot(supervisor_id_for(paths.root))


def _recipes(paths: ProjectPaths) -> list[Path]:
    """The project's recipe and its configuration's (which any project of that config may use)."""
    runtime = _runtime(paths)
    return [recipe_path(runtime), shared_recipe_path(runtime, config_digest(paths.root))]


def _assert_nothing_left(paths: ProjectPaths, docker_sdk: Any) -> None:
    label = f"{LABEL_SUPERVISOR}={supervisor_id_for(paths.root)}"
    leftovers = docker_sdk.containers.list(all=True, filters={"label": label})
    for container in leftovers:
        container.remove(force=True)
    assert not leftovers, f"containers survived: {[c.name for c in leftovers]}"
    runtime = _runtime(paths)
    slots = sorted(p.name for p in runtime.path.iterdir()) if runtime.path.is_dir() else []
    assert not slots, f"runtime directories survived: {slots}"
    locks = owner_directory(runtime.path, supervisor_id_for(paths.root))
    held = sorted(p.name for p in locks.iterdir()) if locks.is_dir() else []
    assert not held, f"owner locks survived: {held}"


async def _new_proposal(scene: ReviewScene, store: Store) -> str:
    """Another open proposal of the scene's task, under review (each launch needs one)."""
    created = await operator_call(
        store,
        "proposal.create",
        {
            "task_id": scene.task_id,
            "agent_id": "implementer-1",
            "title": "Raw SQL again",
            "patch": DEMO_PATCH,
        },
    )
    proposal_id = str(created["proposal"]["id"])
    await operator_call(store, "proposal.request_review", {"proposal_id": proposal_id})
    return proposal_id


@pytest.fixture
async def primed(scene: ReviewScene, role_image_tag: str, docker_sdk: Any) -> AsyncIterator[ReviewScene]:
    """A scene whose first cold launch ran (and so recorded the recipes); removed afterwards.

    Its ``config.toml`` ends with a comment of its own, so no other project's recipe fits it."""
    config = scene.paths.config_file
    config.write_text(config.read_text() + f"# {secrets.token_hex(8)}\n")
    done, events = _launch(scene, scene.proposal_id)
    assert done.returncode == 0, done.stderr
    assert not _named(events, "pool_prestart_adopted"), "no recipe existed: nothing to adopt"
    recipes = _recipes(scene.paths)
    yield scene
    _assert_nothing_left(scene.paths, docker_sdk)
    for path in [*recipes, *_recipes(scene.paths)]:
        path.unlink(missing_ok=True)


async def test_the_first_launch_records_a_private_recipe(primed: ReviewScene) -> None:
    path = recipe_path(_runtime(primed.paths))
    info = path.lstat()
    assert stat.S_ISREG(info.st_mode) and stat.S_IMODE(info.st_mode) == 0o600
    assert stat.S_IMODE(path.parent.lstat().st_mode) == 0o700
    recipe = json.loads(path.read_text())
    assert recipe["kwargs"]["privileged"] is False and recipe["kwargs"]["cap_drop"] == ["ALL"]
    assert recipe["kwargs"]["network_mode"] == "none"


async def test_a_cold_launch_keeps_the_role_tools_schemas_for_the_next(primed: ReviewScene) -> None:
    """The command's launch wrote the schemas its role's tools/list advertised (_schema_cache)."""
    directory = _runtime(primed.paths).base / "schemas"
    assert stat.S_IMODE(directory.lstat().st_mode) == 0o700
    written = list(directory.glob("*.json"))
    assert written and all(stat.S_IMODE(path.lstat().st_mode) == 0o600 for path in written)
    assert any("memory.query" in json.loads(path.read_text()) for path in written)


async def test_the_next_cold_launch_adopts_its_prestarted_container(
    primed: ReviewScene, store: Store, docker_sdk: Any
) -> None:
    proposal_id = await _new_proposal(primed, store)
    done, events = _launch(primed, proposal_id)
    assert done.returncode == 0, done.stderr
    adopted = _named(events, "pool_prestart_adopted")
    assert len(adopted) == 1, events
    launch = json.loads(done.stdout)["launch"]
    assert launch["status"] == "exited" and launch["warnings"], launch
    started = [e for e in events if e["event"] == "container_created"]
    assert started and started[0]["container_id"] == adopted[0]["container_id"], "the launch ran elsewhere"
    _assert_nothing_left(primed.paths, docker_sdk)


async def test_a_recipe_the_configuration_would_not_create_is_removed_not_adopted(
    primed: ReviewScene, store: Store, docker_sdk: Any
) -> None:
    # Same configuration digest, different arguments: only the pool's own comparison can tell.
    path = recipe_path(_runtime(primed.paths))
    recipe = json.loads(path.read_text())
    recipe["kwargs"]["pids_limit"] = int(recipe["kwargs"]["pids_limit"]) + 1
    path.write_text(json.dumps(recipe))
    done, events = _launch(primed, await _new_proposal(primed, store))
    assert done.returncode == 0, done.stderr
    assert not _named(events, "pool_prestart_adopted")
    discarded = _named(events, "pool_prestart_discarded")
    assert len(discarded) == 1 and discarded[0]["reason"] == "arguments differ", events
    assert json.loads(done.stdout)["launch"]["status"] == "exited"
    _assert_nothing_left(primed.paths, docker_sdk)
    # The pool recorded the arguments it really used: the next launch adopts again.
    assert json.loads(path.read_text())["kwargs"]["pids_limit"] == recipe["kwargs"]["pids_limit"] - 1


async def test_a_changed_configuration_or_an_untrusted_recipe_starts_nothing(
    primed: ReviewScene, store: Store
) -> None:
    paths = _recipes(primed.paths)
    for path in paths:
        path.chmod(0o666)  # writable by others: never trusted
    done, events = _launch(primed, await _new_proposal(primed, store))
    assert done.returncode == 0, done.stderr
    assert not _named(events, "pool_prestart_adopted") and not _named(events, "pool_prestart_discarded")
    for path in paths:
        path.chmod(0o600)
    config = primed.paths.config_file
    config.write_text(
        re.sub(r"(?m)^timeout_seconds = .*$", "timeout_seconds = 299", config.read_text(), count=1)
    )
    done, events = _launch(primed, await _new_proposal(primed, store))
    assert done.returncode == 0, done.stderr
    assert not _named(events, "pool_prestart_adopted") and not _named(events, "pool_prestart_discarded")


async def test_a_new_project_of_the_same_configuration_prestarts_its_first_launch(
    primed: ReviewScene, tmp_path: Path, docker_sdk: Any
) -> None:
    paths, _ = init_project(tmp_path / "second")
    paths.config_file.write_text(primed.paths.config_file.read_text())
    other = open_store(paths)
    try:
        task = await operator_call(other, "task.create", {"title": "Another project's task"})
        created = await operator_call(
            other,
            "proposal.create",
            {
                "task_id": task["task"]["id"],
                "agent_id": "implementer-1",
                "title": "Raw SQL",
                "patch": DEMO_PATCH,
            },
        )
        proposal_id = str(created["proposal"]["id"])
        await operator_call(other, "proposal.request_review", {"proposal_id": proposal_id})
    finally:
        other.close()
    scene = ReviewScene(paths, primed.decision_id, primed.unrelated_id, "", proposal_id)
    try:
        done, events = _launch(scene, proposal_id)
        assert done.returncode == 0, done.stderr
        assert len(_named(events, "pool_prestart_adopted")) == 1, events
        assert json.loads(done.stdout)["launch"]["status"] == "exited"
        _assert_nothing_left(paths, docker_sdk)
    finally:
        recipe_path(_runtime(paths)).unlink(missing_ok=True)


async def test_a_command_that_fails_removes_its_prestarted_container(
    primed: ReviewScene, docker_sdk: Any
) -> None:
    done, _ = _launch(primed, "P-20990101T000000000000Z-000000000000")
    assert done.returncode != 0
    assert json.loads(done.stdout)["error"]["code"] == "not_found", done.stdout
    _assert_nothing_left(primed.paths, docker_sdk)
