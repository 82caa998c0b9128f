"""The model gateway's limits: forwarded fields, the token budget under concurrency, the turn
limit, body size, and what a failed upstream answer costs."""

from __future__ import annotations

import json
from typing import Any

import anyio
import httpx2
import pytest
from starlette.applications import Starlette

from store.config import OpenAIProviderConfig
from supervisor.models._gateway import GATEWAY_PATH, ModelGateway

pytestmark = pytest.mark.anyio


class Upstream:
    """A scripted model server behind an httpx2 mock transport (the fault-injection seam)."""

    def __init__(self, *, status: int = 200, usage_of_max: bool = True):
        self.requests: list[dict[str, Any]] = []
        self.status = status
        self.usage_of_max = usage_of_max
        self.gate: anyio.Event | None = None

    async def handler(self, request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        self.requests.append(body)
        if self.gate is not None:
            await self.gate.wait()
        if self.status != 200:
            return httpx2.Response(self.status, json={"error": "upstream down"})
        completion = body["max_tokens"] if self.usage_of_max else 1
        return httpx2.Response(
            200,
            json={
                "choices": [{"message": {"role": "assistant", "content": "ok"}}],
                "usage": {"prompt_tokens": 0, "completion_tokens": completion},
            },
        )


def _gateway(upstream: Upstream, **config: Any) -> tuple[ModelGateway, httpx2.AsyncClient]:
    settings = OpenAIProviderConfig(base_url="http://model.invalid/v1", **config)
    gateway = ModelGateway(settings, "L-test", transport=httpx2.MockTransport(upstream.handler))
    app = Starlette(routes=[gateway.route()])
    client = httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://launch")
    return gateway, client


def _chat(**extra: Any) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": "hi"}], **extra}


async def test_only_known_fields_are_forwarded() -> None:
    upstream = Upstream()
    _, client = _gateway(upstream, max_tokens=1000, model="served-model")
    async with client:
        response = await client.post(
            GATEWAY_PATH,
            json=_chat(stream=True, n=5, max_completion_tokens=999_999, logit_bias={"1": 100}, model="other"),
        )
    assert response.status_code == 200
    (sent,) = upstream.requests
    assert sent["stream"] is False
    assert sent["n"] == 1
    assert sent["model"] == "served-model"
    assert "max_completion_tokens" not in sent
    assert "logit_bias" not in sent
    assert sent["max_tokens"] == 1000


async def test_concurrent_requests_cannot_overspend_the_budget() -> None:
    upstream = Upstream()
    upstream.gate = anyio.Event()
    gateway, client = _gateway(upstream, max_tokens=1000, max_turns=100)
    statuses: list[int] = []

    async def one() -> None:
        statuses.append((await client.post(GATEWAY_PATH, json=_chat())).status_code)

    async with client, anyio.create_task_group() as tg:
        for _ in range(20):
            tg.start_soon(one)
        with anyio.fail_after(10):
            while len(upstream.requests) + gateway.usage.refused < 20:
                await anyio.wait_all_tasks_blocked()
        upstream.gate.set()
    granted = sum(request["max_tokens"] for request in upstream.requests)
    assert granted <= 1000
    assert gateway.usage.total_tokens <= 1000
    assert statuses.count(429) == 20 - len(upstream.requests)


async def test_the_turn_limit_is_enforced_by_the_gateway() -> None:
    upstream = Upstream(usage_of_max=False)
    gateway, client = _gateway(upstream, max_tokens=100_000, max_turns=3)
    async with client:
        codes = [(await client.post(GATEWAY_PATH, json=_chat())).status_code for _ in range(5)]
    assert codes == [200, 200, 200, 429, 429]
    assert gateway.usage.refused == 2
    assert len(upstream.requests) == 3


async def test_an_oversized_body_is_refused_without_going_upstream() -> None:
    upstream = Upstream()
    _, client = _gateway(upstream)
    async with client:
        huge = json.dumps(_chat(padding="x" * (5 * 1024 * 1024)))
        response = await client.post(GATEWAY_PATH, content=huge, headers={"content-type": "application/json"})
    assert response.status_code == 413
    assert upstream.requests == []


async def test_a_failed_upstream_answer_is_charged_its_reservation() -> None:
    upstream = Upstream(status=500)
    gateway, client = _gateway(upstream, max_tokens=300)
    async with client:
        first = await client.post(GATEWAY_PATH, json=_chat(max_tokens=300))
        second = await client.post(GATEWAY_PATH, json=_chat())
    assert first.status_code == 502
    assert gateway.usage.total_tokens == 300
    assert second.status_code == 429
    assert len(upstream.requests) == 1


DEEP = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize(
    "body",
    [
        DEEP,  # json.loads raises RecursionError here, which is not a ValueError
        '{"messages": [' + DEEP + "]}",
        '{"messages": [' + "[" * 65 + "]" * 65 + "]}",  # parses, but deeper than MAX_JSON_DEPTH
        "{not json",
        '{"messages": [], "temperature": NaN}',
        b"\xff\xfe",
    ],
    ids=["deep", "deep-messages", "past-the-limit", "not-json", "nan", "not-utf8"],
)
async def test_a_body_that_is_not_json_within_the_depth_limit_is_a_400_that_goes_nowhere(
    body: str | bytes,
) -> None:
    upstream = Upstream()
    gateway, client = _gateway(upstream)
    async with client:
        response = await client.post(GATEWAY_PATH, content=body, headers={"content-type": "application/json"})
    assert response.status_code == 400, response.text
    assert response.json()["error"]["code"] == "invalid_argument"
    assert "Traceback" not in response.text
    assert upstream.requests == []
    assert gateway.usage.requests == 0
    assert gateway.failure is None


# -- the recorded failure: the first one, with its reason, answered with the same code ---------------


async def _post_twice(gateway: ModelGateway, client: httpx2.AsyncClient) -> list[httpx2.Response]:
    async with client:
        return [await client.post(GATEWAY_PATH, json=_chat()) for _ in range(2)]


async def test_an_unreachable_server_is_recorded_as_model_unavailable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("RT_GATEWAY_TEST_KEY", "sk-never-shown")

    def refuse(request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ConnectError("connection refused", request=request)

    settings = OpenAIProviderConfig(base_url="http://model.invalid/v1", api_key_env="RT_GATEWAY_TEST_KEY")
    gateway = ModelGateway(settings, "L-test", transport=httpx2.MockTransport(refuse))
    app = Starlette(routes=[gateway.route()])
    client = httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://launch")
    first, _ = await _post_twice(gateway, client)
    assert first.status_code == 502
    assert first.json()["error"]["code"] == "model_unavailable"
    assert gateway.failure is not None
    assert gateway.failure.reason == "model_unavailable"
    assert "http://model.invalid/v1" in gateway.failure.message
    assert "unreachable" in gateway.failure.message
    assert "sk-never-shown" not in gateway.failure.message
    assert gateway.usage.total_tokens == 0


async def test_a_timeout_is_recorded_as_model_unavailable() -> None:
    def slow(request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ReadTimeout("timed out", request=request)

    settings = OpenAIProviderConfig(base_url="http://model.invalid/v1")
    gateway = ModelGateway(settings, "L-test", transport=httpx2.MockTransport(slow))
    client = httpx2.AsyncClient(
        transport=httpx2.ASGITransport(app=Starlette(routes=[gateway.route()])), base_url="http://launch"
    )
    first, _ = await _post_twice(gateway, client)
    assert first.json()["error"]["code"] == "model_unavailable"
    assert gateway.failure is not None
    assert gateway.failure.reason == "model_unavailable"
    assert "timed out" in gateway.failure.message


async def test_a_server_error_is_recorded_as_model_error_and_stays_the_first_failure() -> None:
    upstream = Upstream(status=500)
    gateway, client = _gateway(upstream, max_tokens=300)
    first, second = await _post_twice(gateway, client)
    assert (first.status_code, first.json()["error"]["code"]) == (502, "model_error")
    # The budget is then spent and the next request is refused, but the first failure stays.
    assert (second.status_code, second.json()["error"]["code"]) == (429, "budget_exhausted")
    assert gateway.failure is not None
    assert gateway.failure.reason == "model_error"
    assert "answered 500" in gateway.failure.message


@pytest.mark.parametrize(
    "answer",
    [
        b"<html>not json</html>",
        b'{"object": "error"}',
        b'{"choices": []}',
        b"[1, 2]",
        b'{"choices": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",  # json.loads: RecursionError
    ],
    ids=["html", "error-object", "no-choices", "array", "deep"],
)
async def test_a_200_that_is_not_a_chat_completion_is_a_model_error(answer: bytes) -> None:
    def garbage(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, content=answer)

    settings = OpenAIProviderConfig(base_url="http://model.invalid/v1")
    gateway = ModelGateway(settings, "L-test", transport=httpx2.MockTransport(garbage))
    client = httpx2.AsyncClient(
        transport=httpx2.ASGITransport(app=Starlette(routes=[gateway.route()])), base_url="http://launch"
    )
    first, _ = await _post_twice(gateway, client)
    assert (first.status_code, first.json()["error"]["code"]) == (502, "model_error")
    assert gateway.failure is not None
    assert gateway.failure.reason == "model_error"
    assert "no chat completion" in gateway.failure.message


async def test_a_spent_turn_limit_is_recorded_as_budget_exhausted() -> None:
    upstream = Upstream(usage_of_max=False)
    gateway, client = _gateway(upstream, max_tokens=100_000, max_turns=1)
    first, second = await _post_twice(gateway, client)
    assert first.status_code == 200
    assert gateway.failure is not None
    assert (second.status_code, second.json()["error"]["code"]) == (429, "budget_exhausted")
    assert gateway.failure.reason == "budget_exhausted"
    assert "1 model turns" in gateway.failure.message


async def test_a_launch_that_never_failed_records_no_failure() -> None:
    gateway, client = _gateway(Upstream(usage_of_max=False), max_tokens=100_000, max_turns=5)
    responses = await _post_twice(gateway, client)
    assert [response.status_code for response in responses] == [200, 200]
    assert gateway.failure is None
