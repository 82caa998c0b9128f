"""The ``openai`` provider against a real OpenAI-compatible server: llama.cpp with Gemma 3 270M.

Opt-in: these run when ``make llama`` has built ``.venv-llama`` (or ``ROUNDTABLE_LLAMA_VENV``
points at such a virtualenv) and skip with the reason otherwise. The model is tiny, so what is
asserted is the protocol, not the quality: requests go through the supervisor's gateway and are
accounted, the launch ends cleanly (no traceback, no live grant, no container), any warning cites
an active in-scope entry, and the token budget stops the loop.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from starlette.applications import Starlette

from store import Store
from store.config import OpenAIProviderConfig
from store.launches import Launch, LaunchStatus
from supervisor._supervisor import LaunchResult, Supervisor
from supervisor.launch._spec import LABEL_LAUNCH
from supervisor.models import ModelGateway
from supervisor.models._gateway import GATEWAY_PATH
from tests.e2e.conftest import ReviewScene, reopen, write_config
from tests.e2e.llama_server import LlamaServer, find_setup, find_venv, generation_rates, running_server

_VENV, _NO_VENV = find_venv()
# Skipped before any fixture runs, so a machine without the server skips even the Docker tests.
pytestmark = [
    pytest.mark.anyio,
    pytest.mark.llama,
    pytest.mark.slow,
    pytest.mark.skipif(_VENV is None, reason=_NO_VENV),
]

_MAX_TURNS = 4


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    """One llama.cpp server for the module (loading the model takes a few seconds)."""
    setup, reason = find_setup()
    if setup is None:
        pytest.skip(reason)
    log = Path(tmp_path_factory.mktemp("llama")) / "server.log"
    with running_server(setup, log) as server:
        yield server


def _rows(store: Store, sql: str, *params: Any) -> list[sqlite3.Row]:
    return store.db.read(lambda conn: conn.execute(sql, params).fetchall())


def _configure(scene: ReviewScene, server: LlamaServer, **extra: str) -> None:
    write_config(
        scene.paths,
        {
            "[providers.openai]base_url": json.dumps(server.base_url),
            "[providers.openai]model": json.dumps(server.model),
            "[providers.openai]api_key_env": '"RT_LLAMA_TEST_NO_KEY"',
            **{f"[providers.openai]{key}": value for key, value in extra.items()},
        },
    )


async def _launch(scene: ReviewScene) -> tuple[LaunchResult, Store]:
    store = reopen(scene.paths)
    async with Supervisor(store) as supervisor:
        with anyio.fail_after(600):
            result = await supervisor.launch_role("memory_oracle", scene.proposal_id, provider="openai")
    return result, store


def _assert_ended_cleanly(store: Store, docker_sdk: Any, launch: Launch) -> None:
    assert "Traceback" not in (launch.log_tail or ""), launch.log_tail
    assert "Traceback" not in (launch.error or "")
    grants = _rows(store, "SELECT revoked_at FROM capability_grants WHERE launch_id = ?", launch.id)
    assert grants, "the launch had no grant"
    assert all(row["revoked_at"] for row in grants), "a grant outlived its launch"
    assert docker_sdk.containers.list(all=True, filters={"label": f"{LABEL_LAUNCH}={launch.id}"}) == []


def _ended_on_budget(launch: Launch) -> bool:
    """Either shape of "the gateway refused": the launch exited, or failed ``budget_exhausted``."""
    if launch.status is LaunchStatus.EXITED:
        return launch.exit_code == 0
    return launch.status is LaunchStatus.FAILED and launch.reason == "budget_exhausted"


_QUERY_TOOL = {
    "type": "function",
    "function": {
        "name": "memory__query",
        "description": "Search the project's recorded decisions.",
        "parameters": {
            "type": "object",
            "properties": {"query": {"type": "string"}},
            "required": ["query"],
        },
    },
}


def _direct(server: LlamaServer, max_tokens: int) -> tuple[ModelGateway, httpx2.AsyncClient]:
    """The supervisor's gateway for one launch, reached over ASGI, forwarding to the real server."""
    config = OpenAIProviderConfig(base_url=server.base_url, model=server.model, max_tokens=max_tokens)
    gateway = ModelGateway(config, "L-llama-direct")
    transport = httpx2.ASGITransport(app=Starlette(routes=[gateway.route()]))
    return gateway, httpx2.AsyncClient(transport=transport, base_url="http://launch", timeout=300)


def _tool_request(**extra: Any) -> dict[str, Any]:
    return {
        "messages": [
            {"role": "system", "content": "You check patches against recorded decisions."},
            {"role": "user", "content": "Look up the decisions about SQL."},
        ],
        "tools": [_QUERY_TOOL],
        "tool_choice": {"type": "function", "function": {"name": "memory__query"}},
        **extra,
    }


async def test_a_real_server_answers_a_tool_request_through_the_gateway(llama_server: LlamaServer) -> None:
    gateway, client = _direct(llama_server, max_tokens=4000)
    async with client:
        # ``stream`` is dropped by the gateway: the answer is always one JSON document.
        response = await client.post(GATEWAY_PATH, json=_tool_request(max_tokens=64, stream=True))

    assert response.status_code == 200, response.text
    answer = response.json()
    assert answer["choices"][0]["finish_reason"] == "tool_calls"
    (call,) = answer["choices"][0]["message"]["tool_calls"]
    assert call["type"] == "function"
    assert call["id"]
    assert call["function"]["name"] == "memory__query"
    arguments = json.loads(call["function"]["arguments"])  # the server's grammar keeps it to the schema
    assert isinstance(arguments["query"], str)
    assert 0 < answer["usage"]["completion_tokens"] <= 64
    assert gateway.usage.requests == 1
    assert gateway.usage.prompt_tokens == answer["usage"]["prompt_tokens"] > 0
    assert gateway.usage.completion_tokens == answer["usage"]["completion_tokens"]
    assert gateway.usage.refused == 0
    assert generation_rates(llama_server.log), "the server's log reports no generation rate"


async def test_the_gateway_refuses_once_the_real_usage_spends_the_budget(llama_server: LlamaServer) -> None:
    budget = 100  # the prompt alone is about twice that
    gateway, client = _direct(llama_server, max_tokens=budget)
    async with client:
        first = await client.post(GATEWAY_PATH, json=_tool_request(max_tokens=4000))
        second = await client.post(GATEWAY_PATH, json=_tool_request())

    assert first.status_code == 200, first.text
    assert first.json()["usage"]["completion_tokens"] <= budget  # the cap reached the server
    assert second.status_code == 429
    assert second.json()["error"]["code"] == "budget_exhausted"
    assert gateway.usage.requests == 1
    assert gateway.usage.refused == 1
    assert gateway.usage.total_tokens > budget


@pytest.mark.docker
async def test_the_oracle_runs_against_a_real_model_server(
    scene: ReviewScene, llama_server: LlamaServer, docker_sdk: Any, role_image_tag: str
) -> None:
    _configure(scene, llama_server, max_turns=str(_MAX_TURNS))
    result, store = await _launch(scene)
    try:
        launch = result.launch
        assert launch.provider == "openai"
        _assert_ended_cleanly(store, docker_sdk, launch)
        usage = launch.usage
        assert usage is not None
        assert 1 <= usage["requests"] <= _MAX_TURNS
        assert usage["prompt_tokens"] > 0
        assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
        warnings = [
            json.loads(row["payload"])
            for row in _rows(store, "SELECT payload FROM events WHERE type = 'memory.oracle_warning'")
        ]
        if usage["requests"] == 1 and usage["refused"] == 0:
            # What Gemma 3 270M does with the oracle's prompt (over 2,000 tokens with the tool
            # schemas): its first answer is a message, not a tool call, so the loop ends there.
            assert launch.status is LaunchStatus.EXITED, launch.to_dict(with_log=True)
            assert launch.exit_code == 0
            assert warnings == []
        else:
            assert _ended_on_budget(launch), launch.to_dict(with_log=True)
        # Whatever the model cited, the real oracle.warn only let through active, in-scope entries.
        active = {row["id"] for row in _rows(store, "SELECT id FROM memory_entries WHERE status = 'active'")}
        for payload in warnings:
            assert payload["launch_id"] == launch.id
            assert payload["cited_memory_ids"]
            assert set(payload["cited_memory_ids"]) <= active & {scene.decision_id, scene.unrelated_id}
    finally:
        store.close()


@pytest.mark.docker
async def test_a_tiny_budget_ends_the_launch_on_the_budget(
    scene: ReviewScene, llama_server: LlamaServer, docker_sdk: Any, role_image_tag: str
) -> None:
    budget = 64  # smaller than the prompt alone: the first answer spends it all
    _configure(scene, llama_server, max_tokens=str(budget))
    result, store = await _launch(scene)
    try:
        launch = result.launch
        assert _ended_on_budget(launch), launch.to_dict(with_log=True)
        _assert_ended_cleanly(store, docker_sdk, launch)
        usage = launch.usage
        assert usage is not None
        assert usage["requests"] == 1  # nothing went upstream after the budget was spent
        assert usage["refused"] <= 1  # refused only if the model asked for another turn
        assert usage["total_tokens"] > budget
        assert usage["completion_tokens"] <= budget  # the gateway's cap reached the real server
    finally:
        store.close()
