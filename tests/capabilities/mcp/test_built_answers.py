"""Answers built as their result model's JSON (:class:`~capabilities.mcp.BuiltAnswer`) are exactly
what validating them into the model and dumping it would give, and go out as JSON that reads back
the same: ``memory.query`` answers its store's entries without re-validating them."""

from __future__ import annotations

import json
from typing import Any

import pytest

from capabilities.mcp import (
    BuiltAnswer,
    ToolRegistry,
    call_tool,
    message_json,
    tool_call_json,
    tool_result_json,
)
from capabilities.mcp.tools._memory import EntriesResult, EntryResult
from capabilities.principals import local_operator
from capabilities.services import Services
from store.errors import InternalError

pytestmark = pytest.mark.anyio

TLS = {"kind": "forbid_added", "pattern": r"verify\s*=\s*False", "paths": ["app/"], "message": "TLS on."}


def _round_trip(body: dict[str, Any]) -> dict[str, Any]:
    return EntriesResult.model_validate(body).model_dump(mode="json", exclude_unset=True)


@pytest.mark.parametrize("match", ["substring", "ranked"])
async def test_a_query_answer_is_its_models_round_trip(
    services: Services, registry: ToolRegistry, match: str
) -> None:
    memory = services.store.memory
    memory.record(
        scope="project", kind="decision", title="TLS ✓", body_md="Stays on: tls.", checks=[TLS], actor="op"
    )
    memory.record(scope="T-1", kind="fact", title="Ünïcode tls", body_md="tls tls", importance=70, actor="op")
    memory.record(scope="project", kind="summary", title="All", body_md="tls", source_event_id=3, actor="op")
    outcome = await call_tool(
        services, registry, local_operator(), "memory.query", {"query": "tls", "match": match}
    )
    assert outcome.ok, outcome.error
    body = outcome.body()
    assert len(body["entries"]) == 3
    assert body == _round_trip(body)
    # The same keys in the same order as the model's dump, score and checks included.
    assert [list(entry) for entry in body["entries"]] == [
        list(entry) for entry in _round_trip(body)["entries"]
    ]
    assert [entry.get("checks") for entry in body["entries"]].count([TLS]) == 1
    assert all("score" in entry for entry in body["entries"])


def test_a_built_answer_of_another_model_is_an_internal_error(registry: ToolRegistry) -> None:
    spec = registry.get("memory.query")
    assert spec is not None
    assert spec.answer(BuiltAnswer(EntriesResult, {"entries": []})) == {"entries": []}
    with pytest.raises(InternalError):
        spec.answer(BuiltAnswer(EntryResult, {"entry": {}}))


@pytest.mark.parametrize(
    "message",
    [
        {"a": 1, "b": [0.1, 1e20, -0.0, 5e-324, float("inf")], "c": None, "d": True, "e": 2**70},
        {"text": 'quotes " and \\ and \n and ✓ Ünïcode', "nested": {"k": [{"x": "y"}]}},
        {"lone": "\udc80"},  # pydantic refuses a lone surrogate: json.dumps writes it
    ],
)
def test_message_json_reads_back_as_json_dumps_writes_it(message: dict[str, Any]) -> None:
    written = message_json(message)
    assert json.loads(written) == json.loads(json.dumps(message, separators=(",", ":")))
    if json.dumps(message) == json.dumps(message, ensure_ascii=False):  # ASCII only: byte for byte
        assert written == json.dumps(message, separators=(",", ":")).encode()


_META = {
    "resultType": "complete",
    "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "rt", "version": "1"}},
}


@pytest.mark.parametrize(
    "body",
    [
        {"entries": [{"id": "M-1", "title": 'a "quoted" ✓ title\n', "score": 2.5, "checks": [TLS]}]},
        {"entries": []},
        {"entries": [{"score": float("inf")}]},  # written Infinity in both copies, as json.dumps does
        {"error": {"code": "not_found", "message": "no tool named 'x'"}},
    ],
)
@pytest.mark.parametrize("request_id", [7, "req-1"])
def test_a_tool_call_answer_serialized_once_is_the_whole_messages_json(
    body: dict[str, Any], request_id: int | str
) -> None:
    is_error = "error" in body
    whole = {
        "jsonrpc": "2.0",
        "id": request_id,
        "result": {**tool_result_json(body, is_error=is_error), **_META},
    }
    written = tool_call_json(request_id, body, is_error=is_error, extra=_META)
    assert json.loads(written) == whole
    assert written == message_json(whole)  # byte for byte: the same keys, in the same order


def test_an_answer_pydantic_refuses_takes_the_whole_messages_path() -> None:
    lone = {"title": "\udc80"}  # a lone surrogate: json.dumps writes it escaped
    written = tool_call_json(1, lone, is_error=False, extra={})
    assert json.loads(written)["result"]["structuredContent"] == lone
    assert json.loads(json.loads(written)["result"]["content"][0]["text"]) == lone
