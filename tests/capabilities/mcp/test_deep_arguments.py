"""Deeply nested MCP arguments: a structured refusal on every path, never a crash, no change.

Past about 200 levels the SDK's JSON parser answers the request itself (JSON-RPC -32700, HTTP
400); below that, arguments reach the tool registry, which holds them to the same depth limit as
an HTTP body (:data:`store.MAX_JSON_DEPTH`).
"""

from __future__ import annotations

from typing import Any

import pytest

from capabilities.mcp import call_tool
from capabilities.mcp.tools import build_registry
from capabilities.principals import local_operator
from capabilities.services import Services
from capabilities.serving._transports import build_asgi_app, serving
from store import MAX_JSON_DEPTH, Store
from tests.capabilities.http_helpers import body, http_client, mcp_client
from tests.helpers import project_snapshot

pytestmark = pytest.mark.anyio

MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
_RECORD = {"scope": "project", "kind": "decision", "title": "t", "body_md": "b"}


def _nested(depth: int) -> Any:
    value: Any = "x"
    for _ in range(depth - 1):  # "x" inside depth - 1 lists, inside the arguments object: depth
        value = [value]
    return value


@pytest.mark.parametrize("depth", [MAX_JSON_DEPTH + 1, 100_000], ids=["past-the-limit", "far-past"])
async def test_nesting_past_the_limit_is_invalid_argument_through_the_dispatch(
    store: Store, depth: int
) -> None:
    services, registry, operator = Services(store=store), build_registry(), local_operator()
    before = project_snapshot(store.paths)
    for tool, arguments in (
        ("memory.record", {**_RECORD, "checks": _nested(depth)}),
        ("memory.query", {"query": _nested(depth)}),
    ):
        outcome = await call_tool(services, registry, operator, tool, arguments)
        assert outcome.error is not None and outcome.error.code == "invalid_argument", tool
        assert "nested more than 64 levels deep" in outcome.error.message
    assert project_snapshot(store.paths) == before


async def test_nesting_within_the_limit_reaches_the_tool(store: Store) -> None:
    outcome = await call_tool(
        Services(store=store),
        build_registry(),
        local_operator(),
        "memory.query",
        {"query": _nested(MAX_JSON_DEPTH)},
    )
    assert outcome.ok  # a query that is not text matches everything, as documented


async def test_deep_arguments_over_streamable_http(services: Services, store: Store) -> None:
    operator = store.grants.mint_token(name="alice", actor="operator")
    async with serving(build_asgi_app(services), host="127.0.0.1") as address:
        before = project_snapshot(store.paths)
        async with mcp_client(address, operator.token) as client:
            result = await client.call_tool("memory.query", {"query": _nested(100)})
            assert result.is_error
            error = body(result)["error"]
            assert (error["code"], error["message"]) == (
                "invalid_argument",
                "the argument object of memory.query is nested more than 64 levels deep",
            )
        async with http_client(address, operator.token) as raw:
            deep = "[" * 100_000 + "]" * 100_000
            request = (
                '{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "memory.query",'
                f' "arguments": {{"query": {deep}}}}}}}'
            )
            answer = await raw.post(address.mcp_url, content=request, headers=MCP_HEADERS)
        assert answer.status_code == 400
        assert answer.json()["error"]["code"] == -32700  # the SDK's parse error, in JSON-RPC's shape
        assert project_snapshot(store.paths) == before
