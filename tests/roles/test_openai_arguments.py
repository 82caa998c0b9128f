"""A model's tool-call arguments are untrusted text: bad ones go back to the model as
``invalid_argument`` and the loop goes on, over a real MCP client on a real launch-style server."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pytest

from capabilities.mcp.tools import build_registry
from capabilities.services import Services
from capabilities.serving._transports import build_asgi_app, serving
from roles.providers.openai import ToolDescription, run_openai
from roles.tools import McpToolCaller
from store import Store
from tests.capabilities.http_helpers import mcp_client
from tests.capabilities.oracle_helpers import build_world

pytestmark = pytest.mark.anyio


def _nested(depth: int) -> Any:
    value: Any = "x"
    for _ in range(depth):
        value = [value]
    return value


ARGUMENTS: dict[str, Any] = {
    # json.loads raises RecursionError (not ValueError) on this string.
    "recursion": '{"query": ' + "[" * 100_000 + "]" * 100_000 + "}",
    # Parses, but an MCP client cannot send it: the server refuses JSON this deep.
    "too-deep": json.dumps({"query": _nested(300)}),
    "not-an-object": "[1, 2]",
    "not-json": "{query:",
    "an-object-already": {"query": "SQL"},  # some servers send an object, not a string
}


@dataclass
class _Model:
    """Calls memory.query once with each argument above, then stops."""

    requests: list[dict[str, Any]] = field(default_factory=list)

    async def complete(self, request: dict[str, Any]) -> dict[str, Any]:
        self.requests.append(request)
        if len(self.requests) > 1:
            return {"choices": [{"message": {"role": "assistant", "content": "done"}}]}
        calls = [
            {"id": name, "type": "function", "function": {"name": "memory__query", "arguments": arguments}}
            for name, arguments in ARGUMENTS.items()
        ]
        return {"choices": [{"message": {"role": "assistant", "content": None, "tool_calls": calls}}]}


async def test_bad_arguments_are_answered_to_the_model_and_the_loop_goes_on(
    services: Services, store: Store
) -> None:
    world = build_world(store)
    spec = build_registry().get("memory.query")
    assert spec is not None
    model = _Model()
    async with (
        serving(build_asgi_app(services), host="127.0.0.1") as address,
        mcp_client(address, world.token) as client,
    ):
        available = [ToolDescription(spec.name, spec.description, spec.input_schema())]
        report = await run_openai(McpToolCaller(client), model, available, max_turns=3)
    assert report.notes == ["done"]
    answers = {
        message["tool_call_id"]: json.loads(message["content"])
        for message in model.requests[1]["messages"]
        if message["role"] == "tool"
    }
    assert set(answers) == set(ARGUMENTS)
    for name in ("recursion", "too-deep", "not-an-object", "not-json"):
        assert answers[name]["error"]["code"] == "invalid_argument", (name, answers[name])
    assert "nested more than 64 levels deep" in answers["recursion"]["error"]["message"]
    assert "nested more than 64 levels deep" in answers["too-deep"]["error"]["message"]
    assert "entries" in answers["an-object-already"]
