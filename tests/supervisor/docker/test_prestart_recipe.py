"""The prestart's recipe: written private and atomically, read only when trusted and hardened, re-aimed
at a slot; and a prestart that a pool adopted, or that was discarded, is settled once."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from supervisor.docker._prestart import (
    Prestart,
    Recipe,
    _read_recipe,
    recipe_path,
    shared_recipe_path,
    write_recipe,
)
from supervisor.docker._prestart_check import KEYS, hardening_problem
from supervisor.launch import LaunchSpec, OwnerLock, RuntimeRoot, container_kwargs, owner_directory

_KWARGS = {
    "name": "roundtable-W-0123456789ab",
    "labels": {
        "roundtable.launch": "W-0123456789ab",
        "roundtable.pool": "42-deadbeef",
        "roundtable.supervisor": "rt0123456789abcd",
    },
    "mounts": [
        {"Source": "/tmp/rt-0/rt0123456789/0123456789ab", "Target": "/run/roundtable", "ReadOnly": True}
    ],
    "pids_limit": 64,
    "cap_drop": ["ALL"],
}


def _recipe() -> Recipe:
    return Recipe(
        "d" * 64,
        _KWARGS,
        "W-0123456789ab",
        "42-deadbeef",
        "/tmp/rt-0/rt0123456789/0123456789ab",
        "rt0123456789abcd",
    )


def test_a_recipe_is_re_aimed_at_another_slot_owner_and_directory() -> None:
    rundir = "/run/user/0/roundtable/rtfedcba98765/fedcba987654"
    kwargs = _recipe().for_slot("W-fedcba987654", "7-cafef00d", rundir, "rtfedcba98765432")
    assert kwargs["name"] == "roundtable-W-fedcba987654"
    assert kwargs["labels"] == {
        "roundtable.launch": "W-fedcba987654",
        "roundtable.pool": "7-cafef00d",
        "roundtable.supervisor": "rtfedcba98765432",
    }
    assert kwargs["mounts"][0]["Source"] == rundir
    assert kwargs["pids_limit"] == 64 and kwargs["cap_drop"] == ["ALL"]
    assert "0123456789" not in json.dumps(kwargs) and "deadbeef" not in json.dumps(kwargs)


def test_a_written_recipe_reads_back_and_an_untrusted_one_does_not(tmp_path: Path) -> None:
    runtime = RuntimeRoot("rtabcdef0123456", base=tmp_path / "base")
    write_recipe(runtime, _recipe())
    path = recipe_path(runtime)
    assert _read_recipe(path) == _recipe()
    assert _read_recipe(shared_recipe_path(runtime, "d" * 64)) == _recipe()  # any project's, this config
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    path.chmod(0o620)  # group-writable: someone else could have written it
    assert _read_recipe(path) is None
    path.chmod(0o600)
    link = path.with_name("link.json")
    os.symlink(path, link)
    assert _read_recipe(link) is None  # never through a link
    for text in ("not json", json.dumps({"version": 99}), json.dumps({"version": 1, "kwargs": []})):
        path.write_text(text)
        assert _read_recipe(path) is None


def test_only_the_newest_recipes_are_kept(tmp_path: Path) -> None:
    base = tmp_path / "base"
    written = []
    for number in range(70):
        runtime = RuntimeRoot(f"rt{number:04x}{'a' * 10}", base=base)
        write_recipe(runtime, _recipe())
        written.append(recipe_path(runtime))
        os.utime(written[-1], (number, number))  # distinct, increasing write times
    kept = sorted(path.name for path in (base / "prestart").glob("*.json"))
    assert len(kept) <= 64
    assert written[-1].name in kept and written[0].name not in kept


def _hardened_kwargs(rundir: str) -> dict[str, Any]:
    plan_spec = LaunchSpec(
        launch_id="W-0123456789ab",
        role="memory_oracle",
        proposal_id="unclaimed",
        image="roundtable-role:0.1.0",
        runtime_dir=Path(rundir),
    )
    return container_kwargs(plan_spec, "rt0123456789abcd", pool_owner="42-deadbeef", low_weight=False)


def test_the_hardening_check_knows_every_argument_a_launch_has() -> None:
    rundir = "/tmp/rt-0/rt0123456789/0123456789ab"
    kwargs = _hardened_kwargs(rundir)
    assert hardening_problem(kwargs, rundir=rundir) is None
    pooled = container_kwargs(
        LaunchSpec(launch_id="W-0123456789ab", role="r", proposal_id="p", image="i"), "rt0", pool_owner="o"
    )
    assert set(kwargs) | set(pooled) == set(KEYS)  # no key the check does not know, none it invents


@pytest.mark.parametrize(
    ("key", "weaker"),
    [
        ("privileged", True),
        ("privileged", 0),  # not False: types count
        ("read_only", False),
        ("cap_drop", []),
        ("security_opt", []),
        ("network_mode", "bridge"),
        ("ipc_mode", "host"),
        ("user", "0:0"),
        ("init", False),
        ("mounts", [{"Target": "/run/roundtable", "Source": "/", "Type": "bind", "ReadOnly": False}]),
        ("tmpfs", {"/tmp": "rw", "/etc": "rw"}),
        ("cap_add", ["SYS_ADMIN"]),
    ],
)
def test_a_recipe_weaker_than_a_launch_is_refused_before_anything_starts(key: str, weaker: object) -> None:
    rundir = "/tmp/rt-0/rt0123456789/0123456789ab"
    kwargs = {**_hardened_kwargs(rundir), key: weaker}
    assert hardening_problem(kwargs, rundir=rundir) is not None


def test_a_recipe_whose_values_are_not_random_names_is_refused() -> None:
    good = json.loads(_recipe().to_json())
    assert Recipe.parse(json.dumps(good).encode()) == _recipe()
    for key, value in (("slot_id", "ALL"), ("owner", "true"), ("supervisor_id", "none")):
        assert Recipe.parse(json.dumps({**good, key: value}).encode()) is None, key
    assert Recipe.parse(b"[" * 50_000 + b"]" * 50_000) is None  # too deep for json: refused, not raised


def test_an_oversized_recipe_is_refused_not_truncated(tmp_path: Path) -> None:
    runtime = RuntimeRoot("rtabcdef0123456", base=tmp_path / "base")
    write_recipe(runtime, _recipe())
    path = recipe_path(runtime)
    path.write_text(path.read_text()[:-1] + " " * 70_000 + "}")
    assert _read_recipe(path) is None


def test_a_discarded_prestart_is_not_adopted_and_an_adopted_one_is_not_removed(tmp_path: Path) -> None:
    runtime = RuntimeRoot("rtabcdef0123456", base=tmp_path / "base")
    runtime.ensure()
    lock = OwnerLock(owner_directory(runtime.path, "rtabcdef0123456"))
    lock.acquire()
    adopted = Prestart(runtime, lock, "W-0123456789ab", _recipe(), "rtabcdef0123456")
    adopted.rundir = runtime.create("W-0123456789ab")
    adopted._done.set()
    adopted.adopt()
    adopted.discard(release_lock=False)
    assert adopted.rundir.path.is_dir(), "an adopted prestart's directory is the pool's"
    dropped = Prestart(runtime, lock, "W-fedcba987654", _recipe(), "rtabcdef0123456", container_id="c0ffee")
    dropped.rundir = runtime.create("W-fedcba987654")
    dropped._done.set()
    dropped.discard(release_lock=True)
    assert not dropped.rundir.path.exists() and dropped.started() is None
    assert not lock.path.exists()
