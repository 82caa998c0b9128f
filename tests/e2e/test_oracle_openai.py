"""The ``openai`` provider end to end: a real container talks to a scripted model server through the
supervisor's model gateway over the launch socket, with real tool calls."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

from capabilities.serving._transports import serving
from store import Store
from store.launches._store import LaunchStatus
from supervisor._supervisor import Supervisor
from supervisor.launch._spec import LaunchSpec
from tests.e2e.conftest import ReviewScene, reopen, write_config
from tests.e2e.scripted_model import ScriptedModel, final, tool_call, tool_calls, tool_results

pytestmark = [pytest.mark.anyio, pytest.mark.docker]


async def test_tool_calling_loop_with_a_refused_citation_and_a_retry(
    scene: ReviewScene, docker_sdk: Any, role_image_tag: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen_results: list[list[dict[str, Any]]] = []

    def observe(body: dict[str, Any]) -> None:
        seen_results.append(tool_results(body))

    def turn1(body: dict[str, Any]) -> dict[str, Any]:
        tools = {tool["function"]["name"] for tool in body["tools"]}
        assert tools == {
            "task__history",
            "patch__inspect",
            "memory__query",
            "memory__record",
            "memory__summarize",
            "oracle__warn",
        }
        assert body["messages"][0]["role"] == "system"
        assert "cannot vote" in body["messages"][0]["content"]
        return tool_calls(tool_call("task.history", {}, "c1"), tool_call("patch.inspect", {}, "c2"))

    def turn2(body: dict[str, Any]) -> dict[str, Any]:
        observe(body)
        return tool_calls(tool_call("memory.query", {"query": "sql", "exclude_stale": True}, "c3"))

    def turn3(body: dict[str, Any]) -> dict[str, Any]:
        observe(body)
        bad = {"message_md": "Raw SQL contradicts a decision.", "cited_memory_ids": ["M-does-not-exist"]}
        return tool_calls(tool_call("oracle.warn", bad, "c4"))

    def turn4(body: dict[str, Any]) -> dict[str, Any]:
        observe(body)
        good = {"message_md": "Raw SQL bypasses the query builder.", "cited_memory_ids": [scene.decision_id]}
        summary = {
            "scope": scene.task_id,
            "kind": "summary",
            "title": "Oracle summary",
            "body_md": f"- {scene.decision_id}: all SQL through the builder",
        }
        return tool_calls(tool_call("oracle.warn", good, "c5"), tool_call("memory.record", summary, "c6"))

    def turn5(body: dict[str, Any]) -> dict[str, Any]:
        observe(body)
        return final("Warned once; summary recorded.")

    model = ScriptedModel([turn1, turn2, turn3, turn4, turn5])
    monkeypatch.setenv("RT_TEST_MODEL_KEY", "sk-test-secret-key")
    seen_env: list[dict[str, str]] = []

    def capture(spec: LaunchSpec) -> LaunchSpec:
        seen_env.append(dict(spec.environment))
        return spec

    async with serving(model.app(), host="127.0.0.1", port=0) as address:
        write_config(
            scene.paths,
            {
                "[providers.openai]base_url": json.dumps(f"{address.base_url}/v1"),
                "[providers.openai]api_key_env": '"RT_TEST_MODEL_KEY"',
                "[providers.openai]model": '"scripted"',
            },
        )
        store = reopen(scene.paths)
        try:
            async with Supervisor(store, spec_transform=capture) as supervisor:
                with anyio.fail_after(120):
                    result = await supervisor.launch_role(
                        "memory_oracle", scene.proposal_id, provider="openai"
                    )
            warnings = store.db.read(
                lambda c: c.execute(
                    "SELECT payload FROM events WHERE type = 'memory.oracle_warning'"
                ).fetchall()
            )
        finally:
            store.close()

    assert result.launch.status is LaunchStatus.EXITED, result.launch.log_tail
    assert len(model.requests) == 5
    history, patch = seen_results[0]
    assert history["proposal"]["id"] == scene.proposal_id
    assert patch["files"] == ["app/users.py"]
    assert seen_results[2][0]["error"]["code"] == "invalid_citation"  # the refused citation...
    assert "event" in seen_results[3][0]  # ...and the retry that worked
    assert [json.loads(row[0])["cited_memory_ids"] for row in warnings] == [[scene.decision_id]]
    assert result.launch.usage is not None
    assert result.launch.usage["requests"] == 5
    assert result.launch.usage["total_tokens"] == 600
    # The key went to the model server from the supervisor; the container never had it.
    assert set(model.authorizations) == {"Bearer sk-test-secret-key"}
    assert all("sk-test-secret-key" not in value for env in seen_env for value in env.values())
    assert "sk-test-secret-key" not in (result.launch.log_tail or "")
    assert all(request["model"] == "scripted" for request in model.requests)


async def test_the_token_budget_stops_the_loop(
    scene: ReviewScene, docker_sdk: Any, role_image_tag: str
) -> None:
    def forever(body: dict[str, Any]) -> dict[str, Any]:
        return tool_calls(tool_call("memory.query", {"query": "sql"}, f"c{len(body['messages'])}"))

    model = ScriptedModel([forever] * 10)
    async with serving(model.app(), host="127.0.0.1", port=0) as address:
        write_config(
            scene.paths,
            {
                "[providers.openai]base_url": json.dumps(f"{address.base_url}/v1"),
                "[providers.openai]max_tokens": "250",
            },
        )
        store: Store = reopen(scene.paths)
        try:
            async with Supervisor(store) as supervisor:
                with anyio.fail_after(120):
                    result = await supervisor.launch_role(
                        "memory_oracle", scene.proposal_id, provider="openai"
                    )
        finally:
            store.close()
    assert result.launch.status is LaunchStatus.EXITED
    assert len(model.requests) == 3  # 120 + 120 tokens used; the third request still had budget left
    assert result.launch.usage is not None
    assert result.launch.usage["refused"] == 1
    assert all(request["max_tokens"] <= 250 for request in model.requests)
