"""The lazy tool registry: every tool known by name from a static table, a tool's module imported
only when one of its tools is looked up, and every answer the same as the registry of all the tools.

A launch's socket serves its role's tools only; the probe at the end fails if serving an oracle
launch (its machinery, its ``tools/list``, its calls) imports a tool module the oracle has no tool in.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from capabilities.mcp import ToolRegistry, call_tool
from capabilities.mcp.tools import TOOL_MODULES, all_tools, build_registry
from capabilities.policy import MEMORY_ORACLE_TOOLS, OPERATOR_TOOLS
from capabilities.principals import local_operator
from capabilities.services import Services
from store import Store
from tests.capabilities.oracle_helpers import build_world

REPO = Path(__file__).resolve().parents[3]


def test_the_static_table_names_exactly_each_modules_tools_in_order() -> None:
    for module, tools in TOOL_MODULES.items():
        assert tuple(spec.name for spec in importlib.import_module(module).TOOLS) == tools, module
    everything = [spec.name for spec in all_tools()]
    assert everything == [tool for tools in TOOL_MODULES.values() for tool in tools]
    assert build_registry().names() == sorted(everything)
    assert {spec.name: spec for spec in build_registry().specs()} == {spec.name: spec for spec in all_tools()}


def test_a_lookup_answers_as_the_eager_registry_does() -> None:
    eager = ToolRegistry(all_tools())
    for name in [*eager.names(), "memory.nonexistent", "memory__query", "", "memory"]:
        for spelling in (name, name.replace(".", "_")):
            lazy = build_registry()  # nothing loaded yet: each lookup is a first one
            assert lazy.resolve(spelling) is eager.resolve(spelling), spelling
            assert lazy.get(spelling) is eager.get(spelling), spelling
    lazy = build_registry()
    assert [spec.name for spec in lazy.specs_of(["oracle.warn", "memory.query", "no.such"])] == [
        "memory.query",
        "oracle.warn",
    ]


def test_a_module_that_disagrees_with_the_table_is_a_programming_error() -> None:
    wrong = ToolRegistry.lazy({"memory.query": "capabilities.mcp.tools._memory"})  # the module has four
    with pytest.raises(ValueError, match="defines"):
        wrong.get("memory.query")
    with pytest.raises(ValueError, match="registered twice"):
        build_registry().add(all_tools()[0])


@pytest.mark.anyio
async def test_unknown_is_not_found_and_known_outside_the_toolset_forbidden(store: Store) -> None:
    world = build_world(store)
    services = Services(store=store)
    eager = ToolRegistry(all_tools())
    outside = sorted(set(eager.names()) - MEMORY_ORACLE_TOOLS)
    assert outside and OPERATOR_TOOLS - MEMORY_ORACLE_TOOLS
    for spelling in [*outside, *(tool.replace(".", "_") for tool in outside), "vote.nonexistent", "x"]:
        answers = []
        for registry in (build_registry(), eager):  # a fresh lazy one: the tool's module not imported
            outcome = await call_tool(services, registry, world.principal, spelling, {})
            assert outcome.error is not None
            answers.append(outcome.body())
        assert answers[0] == answers[1], spelling
        expected = "forbidden" if eager.resolve(spelling) is not None else "not_found"
        assert answers[0]["error"]["code"] == expected, spelling
    lazy_answer = await call_tool(
        services, build_registry(), local_operator(), "memory_query", {"query": "SQL"}
    )
    eager_answer = await call_tool(services, eager, local_operator(), "memory.query", {"query": "SQL"})
    assert lazy_answer.ok and lazy_answer.body() == eager_answer.body()


_PROBE = """
import json, sys
from pathlib import Path
import anyio

from capabilities.services import Services
from capabilities.serving import LaunchSocketApp
from roles._mcp_http import McpHttpClient
from roles._unix_http import UnixHttpClient
from store import init_project, open_store
from supervisor._launch_records import import_launch_machinery
from supervisor.launch import launch_socket
from tests.capabilities.oracle_helpers import build_world


async def main(root: Path) -> None:
    paths, _ = init_project(root / "proj")
    store = open_store(paths)
    world = build_world(store)
    import_launch_machinery(None, "memory_oracle")  # what a launch does while its container starts
    path = root / "mcp.sock"
    async with launch_socket(LaunchSocketApp(Services(store=store), world.grant_id), path):
        headers = {"Authorization": f"Bearer {world.token}"}
        async with UnixHttpClient(path, headers=headers, timeout=30) as http:
            client = McpHttpClient(http)
            tools = sorted(tool.name for tool in await client.list_tools())
            await client.call_tool("patch.inspect", {})
            await client.call_tool("memory.query", {"query": "SQL"})
    store.close()
    modules = sorted(m for m in sys.modules if m.startswith("capabilities.mcp.tools._"))
    print(json.dumps({"tools": tools, "modules": modules}))


anyio.run(main, Path(sys.argv[1]))
"""


def test_serving_an_oracle_launch_imports_only_the_oracles_tool_modules(tmp_path: Path) -> None:
    script = tmp_path / "probe.py"
    script.write_text(_PROBE)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    result = subprocess.run(
        [sys.executable, str(script), str(tmp_path)], capture_output=True, text=True, env=env, timeout=120
    )
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout.strip().splitlines()[-1])
    assert answer["tools"] == sorted(MEMORY_ORACLE_TOOLS)
    serving = {module for module, tools in TOOL_MODULES.items() if set(tools) & MEMORY_ORACLE_TOOLS}
    assert serving == {"capabilities.mcp.tools._memory", "capabilities.mcp.tools._oracle"}
    assert set(answer["modules"]) == serving, "the launch path imports tool modules the oracle does not serve"
