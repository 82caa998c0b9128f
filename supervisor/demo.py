"""``roundtable demo``: the story of Roundtable in a scratch project.

So far it initialises a scratch project, records a decision in project memory, queries it back
over the real MCP stdio transport, and summarises memory. The proposal, review and oracle parts
are added as those capabilities land.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters

from store import init_project, open_store

__all__ = ["run_demo"]


def _say(text: str) -> None:
    sys.stderr.write(f"demo: {text}\n")
    sys.stderr.flush()


async def run_demo(root: str | None, *, keep: bool = False) -> dict[str, Any]:
    """Run the demo; ``root`` is used as the scratch directory when given."""
    scratch = Path(root) if root else Path(tempfile.mkdtemp(prefix="roundtable-demo-"))
    try:
        paths, _ = init_project(scratch)
        open_store(paths).close()
        _say(f"initialised a scratch project in {paths.root}")
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "supervisor", "--root", str(paths.root), "mcp", "stdio"]
        )
        async with Client(params) as client:
            tools = sorted(tool.name for tool in (await client.list_tools()).tools)
            _say(f"connected over MCP stdio; operator tools: {', '.join(tools)}")
            recorded = await client.call_tool(
                "memory.record",
                {
                    "scope": "project",
                    "kind": "decision",
                    "title": "All SQL goes through the query builder",
                    "body_md": "Raw SQL strings (cursor.execute with f-strings) are not allowed; "
                    "use the query builder in db/query.py so that every value is bound.",
                    "importance": 90,
                },
            )
            entry = (recorded.structured_content or {})["entry"]
            _say(f"recorded decision {entry['id']}")
            found = await client.call_tool("memory.query", {"query": "query builder"})
            summary = await client.call_tool("memory.summarize", {})
        result = {
            "root": str(paths.root),
            "decision": entry,
            "query": found.structured_content,
            "summary_md": (summary.structured_content or {}).get("summary_md", ""),
            "not_built_yet": ["proposals and review rounds", "the MemoryOracle launch", "the timeline"],
        }
        _say("not built yet: proposals, review rounds, the oracle launch and the timeline")
        return result
    finally:
        if not keep and root is None:
            shutil.rmtree(scratch, ignore_errors=True)
