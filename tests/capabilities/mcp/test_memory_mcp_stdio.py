"""The memory tools over the real MCP stdio transport (``roundtable mcp stdio`` in a subprocess)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp_types import CallToolResult

from store import ProjectPaths
from tests.helpers import project_snapshot

pytestmark = pytest.mark.anyio

MEMORY_TOOLS = {"memory.query", "memory.record", "memory.summarize", "memory.mark_stale"}


@asynccontextmanager
async def stdio_client(project: ProjectPaths) -> AsyncIterator[Client]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "supervisor", "--root", str(project.root), "mcp", "stdio"],
        env=dict(os.environ),  # the SDK passes only a minimal one; ROUNDTABLE_STORE_URL must reach it
    )
    with anyio.fail_after(60):
        async with Client(params) as client:
            yield client


def _body(result: CallToolResult) -> dict[str, Any]:
    """The structured answer, checked to equal the text content."""
    assert result.structured_content is not None
    text = result.content[0]
    assert getattr(text, "type", None) == "text"
    assert json.loads(text.text) == result.structured_content  # type: ignore[union-attr]
    body: dict[str, Any] = result.structured_content
    return body


async def test_operator_lists_memory_tools_with_schemas_and_annotations(project: ProjectPaths) -> None:
    async with stdio_client(project) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert set(tools) >= MEMORY_TOOLS
    assert "oracle.warn" not in tools
    record = tools["memory.record"].input_schema
    assert set(record["properties"]) == {
        "scope",
        "kind",
        "title",
        "body_md",
        "source_event_id",
        "importance",
        "memory_id",
        "status",
        "checks",
    }
    assert set(record["required"]) == {"scope", "kind", "title", "body_md"}
    query = tools["memory.query"].input_schema
    assert {"query", "scope", "kind", "limit", "exclude_stale", "match"} <= set(query["properties"])
    assert set(tools["memory.summarize"].input_schema["properties"]) == {"scope", "task_id", "proposal_id"}
    assert set(tools["memory.mark_stale"].input_schema["required"]) == {"memory_id", "reason_md"}
    for name in ("memory.query", "memory.summarize"):
        annotations = tools[name].annotations
        assert annotations is not None and annotations.read_only_hint and annotations.idempotent_hint
    for name in ("memory.record", "memory.mark_stale"):
        annotations = tools[name].annotations
        assert annotations is not None and not annotations.read_only_hint and annotations.destructive_hint


async def test_memory_round_trip_over_stdio(project: ProjectPaths) -> None:
    async with stdio_client(project) as client:
        recorded = _body(
            await client.call_tool(
                "memory.record",
                {"scope": "project", "kind": "decision", "title": "All SQL via builder", "body_md": "aaaa"},
            )
        )
        entry_id = recorded["entry"]["id"]
        found = _body(await client.call_tool("memory.query", {"query": "aa"}))
        assert [e["id"] for e in found["entries"]] == [entry_id]
        assert found["entries"][0]["score"] == 2
        summary = _body(await client.call_tool("memory.summarize", {"scope": "project"}))
        assert summary["entry_count"] == 1 and "All SQL via builder" in summary["summary_md"]
        stale = _body(
            await client.call_tool("memory.mark_stale", {"memory_id": entry_id, "reason_md": "old"})
        )
        assert stale["entry"]["status"] == "stale"
        assert stale["entry"]["body_md"] == "aaaa\n\nStale reason: old"
        after = _body(await client.call_tool("memory.summarize", {}))
        assert after["entry_count"] == 0


def _huge() -> str:
    return "x" * 300_000


BAD_CALLS: list[tuple[str, dict[str, Any], str]] = [
    ("memory.record", {}, "invalid_argument"),
    ("memory.record", {"scope": "p", "kind": "k", "title": "t"}, "invalid_argument"),
    ("memory.record", {"scope": 1, "kind": "k", "title": "t", "body_md": "b"}, "invalid_argument"),
    ("memory.record", {"scope": " ", "kind": "k", "title": "t", "body_md": "b"}, "invalid_argument"),
    ("memory.record", {"scope": "p", "kind": "k", "title": "t", "body_md": _huge()}, "invalid_argument"),
    (
        "memory.record",
        {"scope": "p", "kind": "k", "title": "t", "body_md": "b", "importance": "9"},
        "invalid_argument",
    ),
    (
        "memory.record",
        {"scope": "p", "kind": "k", "title": "t", "body_md": "b", "bogus": 1},
        "invalid_argument",
    ),
    (
        "memory.record",
        {"scope": "p", "kind": "k", "title": "t", "body_md": "b", "memory_id": "M-x\n"},
        "invalid_argument",
    ),
    ("memory.record", {"scope": "p", "kind": "k", "title": "\x1b[2J", "body_md": "b"}, "invalid_argument"),
    ("memory.mark_stale", {"memory_id": "M-x\n", "reason_md": "why"}, "invalid_argument"),
    ("memory.query", {"limit": "ten"}, "invalid_argument"),
    ("memory.query", {"scope": 5}, "invalid_argument"),
    ("memory.query", {"match": "fuzzy"}, "invalid_argument"),
    ("memory.query", {"query": _huge()}, "invalid_argument"),
    ("memory.summarize", {"task_id": ["T-1"]}, "invalid_argument"),
    ("memory.summarize", {"scope": _huge()}, "invalid_argument"),
    ("memory.mark_stale", {}, "invalid_argument"),
    ("memory.mark_stale", {"memory_id": "M-x", "reason_md": ""}, "invalid_argument"),
    ("memory.mark_stale", {"memory_id": "M-missing", "reason_md": "why"}, "not_found"),
    ("memory.mark_stale", {"memory_id": 3, "reason_md": "why"}, "invalid_argument"),
    ("oracle.warn", {"message_md": "x", "cited_memory_ids": ["M-1"]}, "forbidden"),
    ("vote.nonexistent", {}, "not_found"),  # no such tool (a known one outside the toolset is forbidden)
]


async def test_bad_input_gets_structured_errors_and_changes_nothing(project: ProjectPaths) -> None:
    async with stdio_client(project) as client:
        await client.call_tool(
            "memory.record",
            {"scope": "project", "kind": "k", "title": "keep", "body_md": "b", "memory_id": "M-x"},
        )
        before = project_snapshot(project)
        for name, arguments, code in BAD_CALLS:
            result = await client.call_tool(name, arguments)
            assert result.is_error, (name, arguments)
            body = _body(result)
            assert body["error"]["code"] == code, (name, arguments, body)
            assert "Traceback" not in body["error"]["message"]
        assert project_snapshot(project) == before
