"""The prestart's recipe: written private and atomically, read only when trusted, re-aimed at a slot."""

from __future__ import annotations

import json
import os
from pathlib import Path

from supervisor.docker._prestart import Recipe, _read_recipe, recipe_path, shared_recipe_path, write_recipe
from supervisor.launch import RuntimeRoot

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
