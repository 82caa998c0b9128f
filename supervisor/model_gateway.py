"""The model gateway: how a role container reaches a real model without network or credentials.

A container has no network. For the ``openai`` provider, the runner posts chat-completions
requests to ``/model/v1/chat/completions`` on its own launch socket, authenticated by the launch's
grant like every other request there. The supervisor forwards each request to the configured
OpenAI-compatible server with the API key read from the supervisor's environment — the key never
enters the container — and enforces the launch's token budget: ``max_tokens`` of each request is
capped to what remains, and once the budget is spent every further request is refused with 429
``budget_exhausted``. Usage is accumulated for the launch record.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

import httpx2
import structlog
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from store.config import OpenAIProviderConfig

__all__ = ["GATEWAY_PATH", "ModelGateway", "ModelUsage"]

GATEWAY_PATH = "/model/v1/chat/completions"
_MAX_REQUEST_BYTES = 4 * 1024 * 1024
_log = structlog.get_logger("roundtable.model_gateway")


@dataclass
class ModelUsage:
    """Tokens and requests one launch has used."""

    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    refused: int = 0

    @property
    def total_tokens(self) -> int:
        """Prompt plus completion tokens."""
        return self.prompt_tokens + self.completion_tokens

    def to_dict(self) -> dict[str, int]:
        """The JSON shape stored on the launch."""
        return {
            "requests": self.requests,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.total_tokens,
            "refused": self.refused,
        }


def _error(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status)


@dataclass
class ModelGateway:
    """Forwards one launch's chat-completions requests, within its token budget."""

    config: OpenAIProviderConfig
    launch_id: str
    usage: ModelUsage = field(default_factory=ModelUsage)
    transport: httpx2.AsyncBaseTransport | None = None

    def route(self) -> Route:
        """The Starlette route to add to the launch's app."""
        return Route(GATEWAY_PATH, self.handle, methods=["POST"])

    @property
    def remaining(self) -> int:
        """Tokens left in the budget."""
        return max(0, self.config.max_tokens - self.usage.total_tokens)

    async def handle(self, request: Request) -> JSONResponse:
        """Forward one request (the auth middleware has already checked the grant)."""
        body_bytes = await request.body()
        if len(body_bytes) > _MAX_REQUEST_BYTES:
            return _error(413, "invalid_argument", "the request is larger than 4 MiB")
        try:
            body = json.loads(body_bytes)
        except ValueError:
            return _error(400, "invalid_argument", "the request is not JSON")
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            return _error(400, "invalid_argument", "a chat-completions request needs a messages list")
        if self.remaining <= 0:
            self.usage.refused += 1
            return _error(
                429, "budget_exhausted", f"the launch's budget of {self.config.max_tokens} tokens is spent"
            )
        forwarded = {**body, "model": self.config.model}
        requested = body.get("max_tokens")
        cap = self.remaining
        forwarded["max_tokens"] = min(requested, cap) if isinstance(requested, int) and requested > 0 else cap
        api_key = os.environ.get(self.config.api_key_env, "")
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        url = self.config.base_url.rstrip("/") + "/chat/completions"
        try:
            async with httpx2.AsyncClient(transport=self.transport, timeout=300) as client:
                response = await client.post(url, json=forwarded, headers=headers)
        except httpx2.HTTPError as exc:
            _log.warning("model_unreachable", launch_id=self.launch_id, error=type(exc).__name__)
            return _error(502, "launch_failed", f"the model server at {self.config.base_url} is unreachable")
        self.usage.requests += 1
        try:
            answer = response.json()
        except ValueError:
            answer = None
        if response.status_code != 200 or not isinstance(answer, dict):
            return _error(502, "launch_failed", f"the model server answered {response.status_code}")
        usage = answer.get("usage") or {}
        prompt, completion = _count(usage.get("prompt_tokens")), _count(usage.get("completion_tokens"))
        if prompt + completion == 0:
            # A server that reports no usage still spends the budget: estimate 4 bytes a token.
            prompt, completion = len(body_bytes) // 4, len(response.content) // 4
        self.usage.prompt_tokens += prompt
        self.usage.completion_tokens += completion
        _log.info("model_call", launch_id=self.launch_id, total_tokens=self.usage.total_tokens)
        return JSONResponse(answer)


def _count(value: Any) -> int:
    return value if isinstance(value, int) and value > 0 else 0
