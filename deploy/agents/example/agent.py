"""An example agent for a Roundtable launch: an ordinary MCP client, configured the standard way.

It knows nothing of Roundtable's internals. It reads the ``mcpServers`` JSON file named by
``$ROUNDTABLE_MCP_CONFIG``, starts the ``roundtable`` entry over stdio with the ``mcp`` SDK's
client, lists its tools, reads the patch it was launched for (``patch.inspect``: the capability is
bound to one proposal, so no arguments) and votes on it (``vote.cast``; the capability fixes who
votes, so no ``agent_id``): ``approve`` when no line the patch adds contains ``TODO`` or ``FIXME``,
else ``revise``, quoting those lines. It prints one JSON line saying what it did.

Exit status: 0 voted; 1 anything else (one line on stderr).
"""

from __future__ import annotations

import json
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

SERVER = "roundtable"
MARKERS = ("TODO", "FIXME")
HUNK = re.compile(r"@@ -\d+(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


@dataclass(frozen=True)
class Added:
    """One line the patch adds: its file, its number in the new file, its text."""

    path: str
    line: int
    text: str


class AgentError(Exception):
    """The agent could not do its job; the message says why."""


def server_parameters(config_file: str, name: str = SERVER) -> StdioServerParameters:
    """The stdio server ``name`` of a standard ``{"mcpServers": {...}}`` configuration file."""
    config = json.loads(Path(config_file).read_text(encoding="utf-8"))
    try:
        entry = config["mcpServers"][name]
    except (KeyError, TypeError):
        raise AgentError(f"{config_file} configures no MCP server named {name!r}") from None
    return StdioServerParameters(
        command=entry["command"], args=list(entry.get("args", [])), env=entry.get("env")
    )


def added_lines(patch: str) -> list[Added]:
    """The lines a unified diff adds, with their file and line number in the new version."""
    added: list[Added] = []
    path, number, old_left, new_left = "", 0, 0, 0
    for line in patch.splitlines():
        if old_left <= 0 and new_left <= 0:  # between hunks: file headers and hunk headers
            hunk = HUNK.match(line)
            if line.startswith("+++ "):
                path = line[4:].split("\t", 1)[0].removeprefix("b/")
            elif hunk is not None:
                old_left, number, new_left = int(hunk[1] or 1), int(hunk[2]), int(hunk[3] or 1)
        elif line.startswith("+"):
            added.append(Added(path, number, line[1:]))
            number, new_left = number + 1, new_left - 1
        elif line.startswith("-"):
            old_left -= 1
        elif not line.startswith("\\"):  # a context line ("\ No newline at end of file" is not)
            number, old_left, new_left = number + 1, old_left - 1, new_left - 1
    return added


def review(patch: str) -> tuple[str, str, list[Added]]:
    """The vote, its reason in Markdown, and the added lines that carry a marker."""
    flagged = [line for line in added_lines(patch) if any(marker in line.text for marker in MARKERS)]
    if not flagged:
        return "approve", "No line this patch adds contains TODO or FIXME.", flagged
    quoted = "\n".join(f"- `{line.path}:{line.line}`: `{line.text.strip()}`" for line in flagged)
    return "revise", f"Lines this patch adds still mark unfinished work:\n\n{quoted}", flagged


async def call(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """Call ``tool``; its JSON answer, or :class:`AgentError` when the tool refused."""
    result = await client.call_tool(tool, arguments)
    body: Any = result.structured_content
    if body is None:
        text = getattr(result.content[0], "text", "{}") if result.content else "{}"
        body = json.loads(text)
    if result.is_error or not isinstance(body, dict):
        raise AgentError(f"{tool} refused: {json.dumps(body, sort_keys=True)}")
    return body


async def run(config_file: str) -> dict[str, Any]:
    """Connect, read the patch, vote; what was done, as one JSON-able dict."""
    async with Client(stdio_client(server_parameters(config_file))) as client:
        tools = sorted(tool.name for tool in (await client.list_tools()).tools)
        patch = await call(client, "patch.inspect", {})
        vote, reason, flagged = review(str(patch["content"]))
        cast = await call(
            client,
            "vote.cast",
            {"proposal_id": patch["proposal_id"], "vote": vote, "reason_md": reason},
        )
    return {
        "tools": tools,
        "proposal_id": patch["proposal_id"],
        "patch_version": patch["version"],
        "vote": vote,
        "flagged": [f"{line.path}:{line.line}" for line in flagged],
        "vote_id": cast["vote"]["id"],
    }


def main() -> int:
    """Run the agent; print one JSON line (or one error line on stderr) and return the exit status."""
    config_file = os.environ.get("ROUNDTABLE_MCP_CONFIG")
    if not config_file:
        print("agent: ROUNDTABLE_MCP_CONFIG names no MCP configuration file", file=sys.stderr)
        return 1
    try:
        result = anyio.run(run, config_file)
    except Exception as exc:
        while isinstance(exc, ExceptionGroup) and exc.exceptions:
            exc = exc.exceptions[0]
        print(f"agent: failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(result, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
