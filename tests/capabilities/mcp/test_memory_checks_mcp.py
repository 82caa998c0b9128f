"""``memory.record``'s ``checks`` over the real MCP stdio transport: validated, stored, shown, refused."""

from __future__ import annotations

from typing import Any

import pytest

from store import ProjectPaths
from tests.capabilities.mcp.test_memory_mcp_stdio import _body, stdio_client
from tests.helpers import project_snapshot

pytestmark = pytest.mark.anyio

TLS = {"kind": "forbid_added", "pattern": r"verify\s*=\s*False", "paths": ["app/"], "message": "TLS on."}
_ENTRY = {"scope": "project", "kind": "decision", "title": "TLS", "body_md": "Stays on."}

BAD: list[tuple[dict[str, Any], str]] = [
    ({"checks": [{**TLS, "pattern": "(unclosed"}]}, "not a valid regular expression"),
    ({"checks": [{**TLS, "pattern": "(a+)+"}]}, "nests quantifiers"),
    ({"checks": [TLS] * 21}, "at most 20 checks"),
    ({"checks": [{**TLS, "severity": "high"}]}, "unknown field(s) severity"),
    ({"checks": [{**TLS, "kind": "require_added"}]}, "kind must be one of forbid_added, require_kept"),
    ({"kind": "fact", "checks": [TLS]}, "only a decision or a constraint may carry checks"),
    ({"checks": "verify=False"}, "checks must be a list"),
]


async def test_checks_are_advertised_recorded_and_queried(project: ProjectPaths) -> None:
    async with stdio_client(project) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert tools["memory.record"].input_schema["properties"]["checks"]["type"] == "array"
        recorded = _body(await client.call_tool("memory.record", {**_ENTRY, "checks": [TLS]}))["entry"]
        assert recorded["checks"] == [TLS]
        found = _body(await client.call_tool("memory.query", {"query": "tls"}))["entries"]
        assert [e["checks"] for e in found] == [[TLS]]


@pytest.mark.parametrize(("fields", "problem"), BAD)
async def test_bad_checks_are_invalid_argument_and_write_nothing(
    project: ProjectPaths, fields: dict[str, Any], problem: str
) -> None:
    async with stdio_client(project) as client:
        before = project_snapshot(project)
        result = await client.call_tool("memory.record", {**_ENTRY, **fields})
        assert result.is_error
        error = _body(result)["error"]
        assert error["code"] == "invalid_argument" and problem in error["message"], error
        assert project_snapshot(project) == before
