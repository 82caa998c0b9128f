"""The role tools' schemas kept in the runtime base: adopted only when sound and current, else rebuilt."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from capabilities.mcp import _registry
from capabilities.mcp.tools import build_registry
from capabilities.policy import CAPABILITY_TOOLSETS
from supervisor._schema_cache import prepare_role_schemas, schema_key

ROLE_TOOLS = sorted(set().union(*CAPABILITY_TOOLSETS.values()))


@pytest.fixture(autouse=True)
def fresh_schemas(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts as a new process does: no schema built or adopted yet."""
    monkeypatch.setattr(_registry, "_INPUT_SCHEMAS", {})
    monkeypatch.setattr(_registry, "_OUTPUT_SCHEMAS", {})


def _spec(registry: _registry.ToolRegistry, name: str) -> _registry.ToolSpec:
    spec = registry.get(name)
    assert spec is not None
    return spec


def _built() -> dict[str, dict[str, Any]]:
    """What pydantic generates for the role tools, with no cache anywhere."""
    registry = build_registry()
    built = {}
    for name in ROLE_TOOLS:
        spec = _spec(registry, name)
        assert spec.result_model is not None
        built[name] = {
            "input": _registry._build_input_schema(spec.args_model),
            "output": _registry._build_output_schema(spec.result_model),
        }
    return built


def _served() -> dict[str, dict[str, Any]]:
    registry = build_registry()
    return {
        name: {"input": _spec(registry, name).input_schema(), "output": _spec(registry, name).output_schema()}
        for name in ROLE_TOOLS
    }


def _forget(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_registry, "_INPUT_SCHEMAS", {})
    monkeypatch.setattr(_registry, "_OUTPUT_SCHEMAS", {})


def _cache_file(base: Path) -> Path:
    (path,) = (base / "schemas").glob("*.json")
    return path


def test_the_second_process_adopts_what_the_first_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert len(ROLE_TOOLS) >= 5
    assert prepare_role_schemas(build_registry(), ROLE_TOOLS, tmp_path) is False  # built, then written
    path = _cache_file(tmp_path)
    assert path.stat().st_mode & 0o777 == 0o600
    assert json.loads(path.read_text()) == _built()
    _forget(monkeypatch)
    assert prepare_role_schemas(build_registry(), ROLE_TOOLS, tmp_path) is True
    assert _served() == _built()  # what tools/list advertises is what pydantic would have made


def test_the_key_follows_every_source_file_and_the_versions(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "a.py").write_text("A = 1\n")
    (package / "sub" / "b.py").write_text("B = 1\n")
    (package / "notes.txt").write_text("not source")
    key = schema_key([package], ["3.11", "2.0"])
    assert key == schema_key([package], ["3.11", "2.0"])
    assert key != schema_key([package], ["3.11", "2.1"])
    (package / "notes.txt").write_text("still not source, now longer")
    assert key == schema_key([package], ["3.11", "2.0"])
    stat = (package / "sub" / "b.py").stat()
    os.utime(package / "sub" / "b.py", ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    touched = schema_key([package], ["3.11", "2.0"])
    assert touched != key  # an edit that keeps the size still names another file
    (package / "a.py").write_text("A = 10\n")
    assert schema_key([package], ["3.11", "2.0"]) not in (key, touched)
    (package / "c.py").write_text("")
    assert schema_key([package], ["3.11", "2.0"]) != key


@pytest.mark.parametrize("damage", ["group_writable", "link", "not_json", "wrong_shape", "too_few_tools"])
def test_an_unsound_file_is_never_adopted_and_is_written_afresh(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, damage: str
) -> None:
    prepare_role_schemas(build_registry(), ROLE_TOOLS, tmp_path)
    path = _cache_file(tmp_path)
    good = json.loads(path.read_text())
    lie = {name: {"input": {"type": "object", "properties": {"lie": {}}}, "output": {}} for name in good}
    if damage == "group_writable":
        path.write_text(json.dumps(lie))
        path.chmod(0o620)
    elif damage == "link":
        elsewhere = tmp_path / "elsewhere.json"
        elsewhere.write_text(json.dumps(lie))
        path.unlink()
        path.symlink_to(elsewhere)
    elif damage == "not_json":
        path.write_text("{")
    elif damage == "wrong_shape":
        path.write_text(json.dumps({name: {"input": "object", "output": {}} for name in good}))
    else:
        path.write_text(json.dumps({name: good[name] for name in list(good)[1:]}))
    _forget(monkeypatch)
    assert prepare_role_schemas(build_registry(), ROLE_TOOLS, tmp_path) is False
    assert _served() == _built()  # nothing of the bad file reached a schema
    assert not path.is_symlink() and path.stat().st_mode & 0o777 == 0o600
    assert json.loads(path.read_text()) == good


def test_a_rejected_file_adopts_nothing_at_all(monkeypatch: pytest.MonkeyPatch) -> None:
    registry = build_registry()
    good = registry.export_schemas(ROLE_TOOLS)
    _forget(monkeypatch)
    half = dict(good)
    half[ROLE_TOOLS[-1]] = {"input": {"type": "object"}, "output": None}  # this tool has a result model
    assert registry.adopt_schemas(half, ROLE_TOOLS) is False
    assert _registry._INPUT_SCHEMAS == {} and _registry._OUTPUT_SCHEMAS == {}
    assert registry.adopt_schemas({**good, "extra.tool": good[ROLE_TOOLS[0]]}, ROLE_TOOLS) is False
    assert registry.adopt_schemas([], ROLE_TOOLS) is False
    assert _registry._INPUT_SCHEMAS == {}
    assert registry.adopt_schemas(good, ROLE_TOOLS) is True


def test_without_a_private_base_it_builds_and_writes_nothing(tmp_path: Path) -> None:
    assert prepare_role_schemas(build_registry(), ROLE_TOOLS, None) is False
    missing = tmp_path / "not-yet"
    assert prepare_role_schemas(build_registry(), ROLE_TOOLS, missing) is False
    assert not missing.exists()  # the base is the supervisor's to create, with its own mode
    assert _served() == _built()


def test_each_launch_roles_tools_have_their_own_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An oracle launch and a reviewer launch prepare their own tools, and neither rewrites the other's."""
    oracle, reviewer = sorted(CAPABILITY_TOOLSETS["memory_oracle"]), sorted(CAPABILITY_TOOLSETS["reviewer"])
    assert oracle != reviewer
    assert prepare_role_schemas(build_registry(), oracle, tmp_path) is False
    assert prepare_role_schemas(build_registry(), reviewer, tmp_path) is False
    assert len(list((tmp_path / "schemas").glob("*.json"))) == 2
    _forget(monkeypatch)
    assert prepare_role_schemas(build_registry(), oracle, tmp_path) is True
    assert prepare_role_schemas(build_registry(), reviewer, tmp_path) is True
