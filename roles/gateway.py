"""The model gateway client: chat-completions requests to the supervisor over the launch socket."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx2

from roles.providers.openai import GatewayRefused

__all__ = ["MODEL_GATEWAY_PATH", "SocketChatGateway"]

MODEL_GATEWAY_PATH = "/model/v1/chat/completions"


@dataclass
class SocketChatGateway:
    """Posts chat-completions requests to the supervisor's gateway route with the grant token."""

    client: httpx2.AsyncClient

    async def complete(self, request: dict[str, Any]) -> dict[str, Any]:
        """One request; a refusal (budget spent, upstream failure) raises :class:`GatewayRefused`
        with the gateway's error code as its reason."""
        try:
            response = await self.client.post(MODEL_GATEWAY_PATH, json=request, timeout=300)
        except httpx2.HTTPError as exc:
            raise GatewayRefused(
                "model_unavailable", f"the model gateway could not be reached: {type(exc).__name__}"
            ) from exc
        try:
            body = response.json()
        except ValueError:
            body = {}
        if response.status_code != 200:
            error = body.get("error") if isinstance(body, dict) else None
            error = error if isinstance(error, dict) else {}
            raise GatewayRefused(
                str(error.get("code") or "model_error"),
                str(error.get("message") or f"the model gateway answered {response.status_code}"),
            )
        if not isinstance(body, dict):
            raise GatewayRefused("model_error", "the model gateway answered something other than an object")
        return body
