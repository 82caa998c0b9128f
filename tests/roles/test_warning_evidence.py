"""Every provider hands ``oracle.warn`` its confidence and the patch lines it rests on."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pytest

from capabilities.mcp.tools import build_registry
from capabilities.services import Services
from roles.providers.judge import run_judge
from roles.providers.lexical import CONFIDENCE, run_lexical
from roles.providers.openai import ToolDescription, run_openai
from store import Store
from tests.capabilities.oracle_helpers import DispatchCaller, build_world

pytestmark = pytest.mark.anyio

_SQL_LINE = '    return conn.execute(f"SELECT * FROM users WHERE id = {user}")'


async def test_the_judge_passes_its_confidence_and_quoted_lines(store: Store) -> None:
    world = build_world(store)
    report = await run_judge(DispatchCaller(Services(store=store), world.principal))
    payloads = [w["payload"] for w in report.warnings]
    assert payloads, "the judge should warn on raw SQL against 'No raw SQL.'"
    for payload in payloads:
        assert 0.62 <= payload["confidence"] <= 1.0
        assert f"{payload['confidence']:.2f}" in payload["message_md"]  # the same number as the text
        assert {"path": "app/db.py", "line": 2, "text": _SQL_LINE} in payload["evidence"]


async def test_lexical_passes_a_low_confidence_and_the_lines_it_matched(store: Store) -> None:
    world = build_world(store)
    report = await run_lexical(DispatchCaller(Services(store=store), world.principal))
    payloads = [w["payload"] for w in report.warnings]
    assert payloads
    for payload in payloads:
        assert payload["confidence"] == CONFIDENCE < 0.5
        assert payload["evidence"]
        assert all(item["path"] == "app/db.py" and item["line"] >= 1 for item in payload["evidence"])


@dataclass
class _ScriptedGateway:
    """A model that warns once with confidence and evidence, then stops."""

    arguments: dict[str, Any]
    requests: list[dict[str, Any]] = field(default_factory=list)

    async def complete(self, request: dict[str, Any]) -> dict[str, Any]:
        self.requests.append(request)
        if len(self.requests) > 1:
            return {"choices": [{"message": {"role": "assistant", "content": "done"}}]}
        call = {"id": "c1", "function": {"name": "oracle__warn", "arguments": json.dumps(self.arguments)}}
        return {"choices": [{"message": {"role": "assistant", "content": None, "tool_calls": [call]}}]}


async def test_openai_passes_what_the_model_supplies(store: Store) -> None:
    world = build_world(store)
    evidence = [{"path": "app/db.py", "line": 2, "text": _SQL_LINE}]
    gateway = _ScriptedGateway(
        {
            "message_md": "raw SQL",
            "cited_memory_ids": [world.task_memory],
            "confidence": 0.7,
            "evidence": evidence,
        }
    )
    spec = build_registry().get("oracle.warn")
    assert spec is not None
    available = [ToolDescription(spec.name, spec.description, spec.input_schema())]
    report = await run_openai(
        DispatchCaller(Services(store=store), world.principal), gateway, available, max_turns=3
    )
    [payload] = [w["payload"] for w in report.warnings]
    assert (payload["confidence"], payload["evidence"]) == (0.7, evidence)
    parameters = gateway.requests[0]["tools"][0]["function"]["parameters"]
    assert {"confidence", "evidence"} <= set(parameters["properties"])  # what the model sees
