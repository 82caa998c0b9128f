"""The MCP bridge, end to end on the host: a real launch socket bound to a minted oracle grant, and
the real ``mcp`` stdio client starting ``python -m roles.bridge`` as its configuration says.

What the agent sees through the bridge is what the launch socket serves, unchanged: the tool list,
a call's content and structured content, a refusal and its code. A missing channel or a refused
token ends the bridge with the runner's exit statuses and one line on stderr, and nothing on stdout.
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp_types import CallToolResult

from roles.channel import EXIT_NO_CHANNEL, EXIT_NO_GRANT, open_channel
from roles.oracle import MEMORY_ORACLE
from store import Store
from supervisor.launch import MCP_SERVER_NAME, mcp_client_config
from tests.capabilities.oracle_helpers import build_world
from tests.conftest import REPO_ROOT
from tests.roles.conftest import Launch

pytestmark = pytest.mark.anyio


def _bridge_parameters(directory: Path) -> StdioServerParameters:
    """The configuration's ``roundtable`` entry, pointed at ``directory``, run with this interpreter
    (the host has no role-image virtualenv) on this checkout."""
    entry = mcp_client_config(str(directory))["mcpServers"][MCP_SERVER_NAME]
    env = {**entry["env"], "PYTHONPATH": str(REPO_ROOT)}
    return StdioServerParameters(command=sys.executable, args=entry["args"], env=env)


@asynccontextmanager
async def _bridged(directory: Path) -> AsyncIterator[Client]:
    """An MCP client over stdio to the bridge, as an agent reading the configuration starts it."""
    async with Client(stdio_client(_bridge_parameters(directory))) as client:
        yield client


@asynccontextmanager
async def _direct(launch: Launch) -> AsyncIterator[Client]:
    """The launch socket itself, for comparison."""
    async with open_channel(launch.paths) as channel:
        yield channel.client


def _dump(value: Any) -> Any:
    return value.model_dump(mode="json", by_alias=True, exclude_none=True)


def _answer(result: CallToolResult) -> tuple[Any, ...]:
    """What an agent reads from a call's result."""
    return ([_dump(item) for item in result.content], result.structured_content, result.is_error)


async def test_the_tool_list_through_the_bridge_is_the_launch_socket_s(launch: Launch) -> None:
    async with _direct(launch) as direct:
        expected = [_dump(tool) for tool in (await direct.list_tools()).tools]
    async with _bridged(launch.directory) as bridged:
        listed = await bridged.list_tools()
        assert bridged.server_info is not None and bridged.server_info.name == "roundtable"
    assert [_dump(tool) for tool in listed.tools] == expected
    assert listed.next_cursor is None
    assert {tool["name"] for tool in expected} == MEMORY_ORACLE.tools
    # Descriptions, input schemas and annotations are all there to pass through.
    assert all(tool["description"] and tool["inputSchema"] and tool["annotations"] for tool in expected)


async def test_a_call_s_answer_passes_through_unchanged(launch: Launch, store: Store) -> None:
    async with _direct(launch) as direct:
        expected = await direct.call_tool("patch.inspect", {})
    async with _bridged(launch.directory) as bridged:
        result = await bridged.call_tool("patch.inspect", {})
        warned = await bridged.call_tool(
            "oracle.warn",
            {
                "message_md": "Raw SQL, against the builder rule.",
                "cited_memory_ids": [launch.world.task_memory],
            },
        )
    assert _answer(result) == _answer(expected)
    assert result.is_error is False and result.structured_content is not None
    assert result.structured_content["proposal_id"] == launch.world.proposal_id
    assert "SELECT * FROM users" in result.structured_content["content"]
    # A write through the bridge is the grant's write.
    assert warned.is_error is False and warned.structured_content is not None
    event_id = warned.structured_content["event"]["id"]
    row = store.db.read(
        lambda conn: conn.execute("SELECT type, actor FROM events WHERE id = ?", (event_id,)).fetchone()
    )
    assert (row["type"], row["actor"]) == ("memory.oracle_warning", launch.world.principal.actor)


async def test_a_refused_call_stays_a_refusal_with_its_code(launch: Launch) -> None:
    foreign = {"proposal_id": launch.world.foreign_proposal_id}
    calls: list[tuple[str, dict[str, Any]]] = [("patch.inspect", foreign), ("vote.cast", {})]
    async with _direct(launch) as direct:
        expected = [await direct.call_tool(tool, args) for tool, args in calls]
    async with _bridged(launch.directory) as bridged:
        refused = [await bridged.call_tool(tool, args) for tool, args in calls]
    assert [_answer(result) for result in refused] == [_answer(result) for result in expected]
    errors = [result.structured_content["error"] for result in refused if result.structured_content]
    assert [result.is_error for result in refused] == [True, True]
    assert [error["code"] for error in errors] == ["forbidden", "forbidden"]
    assert launch.world.foreign_proposal_id in errors[0]["message"]


async def _run_bridge(directory: Path) -> tuple[int, str, str]:
    parameters = _bridge_parameters(directory)
    assert parameters.env is not None
    result = await anyio.run_process(
        [parameters.command, *parameters.args], env=parameters.env, input=b"", check=False
    )
    return result.returncode, result.stdout.decode(), result.stderr.decode()


async def test_the_bridge_ends_cleanly_when_the_agent_closes_its_stdin(launch: Launch) -> None:
    code, out, err = await _run_bridge(launch.directory)
    assert (code, out, err) == (0, "", "")


async def test_a_refused_or_missing_token_ends_the_bridge_with_status_3(launch: Launch, store: Store) -> None:
    other = build_world(store, launch_id="L-other")
    (launch.directory / "token").unlink()
    code, out, err = await _run_bridge(launch.directory)
    assert (code, out) == (EXIT_NO_GRANT, "")
    assert err.startswith("roles.bridge: no grant: cannot read") and err.count("\n") == 1
    (launch.directory / "token").write_text(other.token)  # a real token, for another launch's grant
    code, out, err = await _run_bridge(launch.directory)
    assert (code, out) == (EXIT_NO_GRANT, "")
    assert err == "roles.bridge: no grant: the supervisor refused this launch's token\n"
    assert other.token not in err


async def test_a_bad_token_fails_the_agent_s_connection(launch: Launch) -> None:
    (launch.directory / "token").write_text("rt-not-a-real-token")
    with pytest.raises(Exception):
        async with _bridged(launch.directory) as bridged:
            await bridged.list_tools()


async def test_no_socket_ends_the_bridge_with_status_2() -> None:
    with tempfile.TemporaryDirectory(prefix="rtb-", dir="/tmp") as tmp:
        code, out, err = await _run_bridge(Path(tmp))
    assert (code, out) == (EXIT_NO_CHANNEL, "")
    assert err == f"roles.bridge: no launch channel: {tmp}/mcp.sock does not exist\n"


async def test_the_bridge_takes_no_arguments() -> None:
    result = await anyio.run_process([sys.executable, "-m", "roles.bridge", "--verbose"], check=False)
    assert (result.returncode, result.stdout) == (1, b"")
    assert b"takes no arguments" in result.stderr
