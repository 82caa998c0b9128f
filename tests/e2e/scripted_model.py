"""A scripted OpenAI-compatible chat-completions server for tests, served over real HTTP.

Each request is answered by the next function of a script; requests are kept for assertions. A
turn returns a completion (a dict, sent as JSON) or any Starlette response, for faults such as
:func:`server_error` and :func:`garbage`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

Turn = Callable[[dict[str, Any]], dict[str, Any] | Response]

__all__ = ["ScriptedModel", "Turn", "final", "garbage", "server_error", "tool_call", "tool_calls"]


def tool_call(name: str, arguments: dict[str, Any], call_id: str) -> dict[str, Any]:
    """One function call in OpenAI's shape (dots become ``__`` in function names)."""
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name.replace(".", "__"), "arguments": json.dumps(arguments)},
    }


def tool_calls(*calls: dict[str, Any]) -> dict[str, Any]:
    """A completion that asks for tool calls."""
    return {
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": None, "tool_calls": list(calls)}}
        ],
        "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
    }


def final(text: str) -> dict[str, Any]:
    """A completion with no tool calls: the loop ends."""
    return {
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
    }


def server_error(body: dict[str, Any]) -> Response:
    """A turn that fails: 500 with an error object, as a broken server would answer."""
    return JSONResponse({"error": {"message": "the model crashed", "type": "server_error"}}, status_code=500)


def garbage(body: dict[str, Any]) -> Response:
    """A turn that answers 200 with a body that is not JSON at all."""
    return Response(b"<html><body>502 Bad Gateway</body></html>", media_type="text/html")


@dataclass
class ScriptedModel:
    """The server's state: the script, the requests seen and their headers."""

    script: list[Turn]
    requests: list[dict[str, Any]] = field(default_factory=list)
    authorizations: list[str | None] = field(default_factory=list)

    def app(self) -> Starlette:
        """The ASGI app: ``POST /v1/chat/completions``."""

        async def complete(request: Request) -> Response:
            body = await request.json()
            self.requests.append(body)
            self.authorizations.append(request.headers.get("authorization"))
            index = len(self.requests) - 1
            if index >= len(self.script):
                return JSONResponse(final("script finished"))
            answer = self.script[index](body)
            return answer if isinstance(answer, Response) else JSONResponse(answer)

        return Starlette(routes=[Route("/v1/chat/completions", complete, methods=["POST"])])


def tool_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The tool messages of the latest turn, decoded."""
    results = []
    for message in reversed(body["messages"]):
        if message.get("role") != "tool":
            break
        results.append(json.loads(message["content"]))
    return list(reversed(results))
