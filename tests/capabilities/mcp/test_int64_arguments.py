"""Every integer argument of every tool, past SQLite's 64-bit range: ``invalid_argument``, no change.

The cases come from the registry's argument schemas, so a new tool or a new integer argument is
covered as soon as it is registered. The other arguments are filled with values that validate
(known IDs where a name says so), so the integer is what reaches the tool, not a missing field.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from capabilities.mcp import call_tool
from capabilities.mcp.tools import build_registry
from capabilities.policy import OPERATOR_TOOLS, ROLE_TOOLSETS
from capabilities.principals import local_operator
from capabilities.services import Services
from store import Store
from store._text import INT64_MAX, INT64_MIN
from tests.capabilities.oracle_helpers import OracleWorld, build_world
from tests.helpers import project_snapshot

pytestmark = pytest.mark.anyio

_REGISTRY = build_registry()
_OUT_OF_RANGE = (INT64_MAX + 1, INT64_MIN - 1)
Path = tuple[str | int, ...]


def _resolve(schema: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with ``$ref`` followed and ``X | None`` narrowed to ``X``."""
    if "$ref" in schema:
        return _resolve(defs[schema["$ref"].rsplit("/", 1)[-1]], defs)
    branches = [branch for branch in schema.get("anyOf", []) if branch.get("type") != "null"]
    return _resolve(branches[0], defs) if branches else schema


def _integer_paths(schema: dict[str, Any], defs: dict[str, Any], path: Path = ()) -> Iterator[Path]:
    """Where an integer goes in the arguments: ``("limit",)``, ``("evidence", 0, "line")``, ..."""
    schema = _resolve(schema, defs)
    kind = schema.get("type")
    if kind == "integer":
        yield path
    elif kind == "array":
        yield from _integer_paths(schema.get("items", {}), defs, (*path, 0))
    elif kind == "object":
        for name, prop in schema.get("properties", {}).items():
            yield from _integer_paths(prop, defs, (*path, name))


def _cases() -> list[tuple[str, Path]]:
    cases = []
    for spec in _REGISTRY.specs():
        schema = spec.input_schema()
        cases += [(spec.name, path) for path in _integer_paths(schema, schema.get("$defs", {}))]
    return cases


_CASES = _cases()


def _known(world: OracleWorld) -> dict[str, Any]:
    return {
        "proposal_id": world.proposal_id,
        "task_id": world.task_id,
        "memory_id": world.task_memory,
        "cited_memory_ids": [world.task_memory],
        "agent_id": "implementer-1",
        "path": "app/db.py",
    }


def _sample(schema: dict[str, Any], defs: dict[str, Any], name: str, known: dict[str, Any]) -> Any:
    """A value that validates against ``schema``: a known ID by name, else the simplest one."""
    if name in known:
        return known[name]
    schema = _resolve(schema, defs)
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type")
    if kind == "array":
        return [_sample(schema.get("items", {}), defs, "", known)]
    if kind == "object":
        props = schema.get("properties", {})
        return {key: _sample(props[key], defs, key, known) for key in schema.get("required", [])}
    return {"integer": 1, "number": 0.5, "boolean": False}.get(str(kind), "x")


def _arguments(tool: str, path: Path, value: int, world: OracleWorld) -> dict[str, Any]:
    """Arguments that validate, with ``value`` at ``path`` (its field filled in when optional)."""
    spec = _REGISTRY.get(tool)
    assert spec is not None
    schema = spec.input_schema()
    defs, known = schema.get("$defs", {}), _known(world)
    arguments: dict[str, Any] = _sample(schema, defs, "", known)
    top = str(path[0])
    arguments.setdefault(top, _sample(schema["properties"][top], defs, top, known))
    node: Any = arguments
    for step in path[:-1]:
        node = node[step]
    node[path[-1]] = value
    return arguments


def _principal(tool: str, world: OracleWorld) -> Any:
    if tool in OPERATOR_TOOLS:
        return local_operator()
    assert any(tool in tools for tools in ROLE_TOOLSETS.values()), f"{tool} is in no toolset"
    return world.principal


def test_every_integer_argument_is_found() -> None:
    """The walk sees nested integers too (a guard on the test itself)."""
    assert ("oracle.warn", ("cited_event_ids", 0)) in _CASES
    assert ("oracle.warn", ("evidence", 0, "line")) in _CASES
    assert ("memory.record", ("source_event_id",)) in _CASES
    assert ("oracle.feedback", ("warning_event_id",)) in _CASES


@pytest.mark.parametrize("value", _OUT_OF_RANGE, ids=["2**63", "-2**63-1"])
@pytest.mark.parametrize(("tool", "path"), _CASES, ids=[f"{t}:{'.'.join(map(str, p))}" for t, p in _CASES])
async def test_an_integer_past_int64_is_invalid_argument_and_changes_nothing(
    tool: str, path: Path, value: int, store: Store
) -> None:
    world = build_world(store)
    principal = _principal(tool, world)
    spec = _REGISTRY.get(tool)
    assert spec is not None
    # With an in-range integer the arguments validate, so the one out of range is what is judged.
    spec.parse(_arguments(tool, path, 1, world))
    arguments = _arguments(tool, path, value, world)
    before = project_snapshot(store.paths)
    outcome = await call_tool(Services(store=store), _REGISTRY, principal, tool, arguments)
    assert outcome.error is not None, (tool, arguments)
    assert outcome.error.code == "invalid_argument", (tool, path, outcome.error.to_dict())
    assert project_snapshot(store.paths) == before
