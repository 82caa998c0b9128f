"""``[mcp] tool_names`` in config.toml and ``--tool-names``: the real CLI in a subprocess, a real MCP
client on stdio. The flag wins over the key; a bad value is a clear configuration error."""

from __future__ import annotations

import json
import os
import re
import subprocess
import tomllib

import anyio
import pytest
from mcp import Client, StdioServerParameters

from store import ProjectPaths
from store.config import DEFAULT_CONFIG_TOML, load_config


def _set_tool_names(project: ProjectPaths, value: str) -> None:
    path = project.config_file
    text = path.read_text(encoding="utf-8")
    replaced, count = re.subn(r'^tool_names = "dotted"', f'tool_names = "{value}"', text, flags=re.MULTILINE)
    assert count == 1, "init writes [mcp] tool_names"
    path.write_text(replaced, encoding="utf-8")


async def _listed(roundtable_argv: list[str], project: ProjectPaths, *flags: str) -> set[str]:
    argv = [*roundtable_argv, "--root", str(project.root), "mcp", "stdio", *flags]
    params = StdioServerParameters(command=argv[0], args=argv[1:], env=dict(os.environ))
    with anyio.fail_after(60):
        async with Client(params) as client:
            return {tool.name for tool in (await client.list_tools()).tools}


def test_init_writes_the_key_with_its_default(project: ProjectPaths) -> None:
    assert tomllib.loads(DEFAULT_CONFIG_TOML.replace("{version}", "0"))["mcp"] == {"tool_names": "dotted"}
    assert "[mcp]" in project.config_file.read_text(encoding="utf-8")
    assert load_config(project.config_file).mcp.tool_names == "dotted"


@pytest.mark.anyio
async def test_the_key_chooses_the_listing_and_the_flag_wins(
    roundtable_argv: list[str], project: ProjectPaths
) -> None:
    assert "memory.query" in await _listed(roundtable_argv, project)
    _set_tool_names(project, "underscore")
    underscored = await _listed(roundtable_argv, project)
    assert "memory_query" in underscored and not any("." in name for name in underscored)
    dotted = await _listed(roundtable_argv, project, "--tool-names", "dotted")
    assert "memory.query" in dotted and "memory_query" not in dotted


def test_a_bad_value_is_a_clear_config_error(roundtable_argv: list[str], project: ProjectPaths) -> None:
    _set_tool_names(project, "camelCase")
    argv = [*roundtable_argv, "--json", "--root", str(project.root), "mcp", "stdio"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode == 1, (done.stdout, done.stderr)
    error = json.loads(done.stdout)["error"]
    assert error["code"] == "invalid_argument"
    assert "mcp.tool_names" in error["message"] and "underscore" in error["message"], error
    assert "Traceback" not in done.stderr


def test_a_bad_flag_is_a_usage_error(roundtable_argv: list[str], project: ProjectPaths) -> None:
    argv = [*roundtable_argv, "--root", str(project.root), "serve", "--tool-names", "dots"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "--tool-names" in done.stderr
