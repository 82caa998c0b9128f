"""The ``openai`` provider: a tool-calling loop with any OpenAI-compatible chat-completions server.

The container has no network. Model requests go to the supervisor's model gateway over the
launch socket (``POST /model/v1/chat/completions``, authenticated by the same grant token); the
supervisor adds the provider's credentials, which never enter the container, forwards the
request, enforces the launch's token budget and turn limit and records usage. The loop ends when
the model stops calling tools. When the gateway refuses a request (the model server is
unreachable, answered badly, or the budget or turn limit is spent) the provider has not done its
job: :class:`GatewayRefused` propagates, with the gateway's reason, and the runner exits with its
provider-failed status. Warnings already written stay.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Protocol

from roles.oracle import MEMORY_ORACLE
from roles.providers.base import ProviderReport
from roles.tools import ToolCaller, ToolCallError

__all__ = ["ChatGateway", "GatewayRefused", "ToolDescription", "run_openai"]

_MAX_ARGUMENT_DEPTH = 64
"""The store's ``MAX_JSON_DEPTH``, repeated (roles import nothing of ours): deeper arguments from
a model would crash the MCP client sending them, or be refused by the server's JSON parser."""


class GatewayRefused(Exception):
    """The model gateway refused a request; ``reason`` is its error code (``model_unavailable``,
    ``model_error``, ``budget_exhausted``, ...), ``message`` its explanation."""

    def __init__(self, reason: str, message: str):
        super().__init__(f"{reason}: {message}")
        self.reason = reason
        self.message = message


class ChatGateway(Protocol):
    """Sends one chat-completions request and returns the decoded response."""

    async def complete(self, request: dict[str, Any]) -> dict[str, Any]:
        """POST the request; raise :class:`GatewayRefused` when the gateway says no."""
        ...


@dataclass(frozen=True)
class ToolDescription:
    """A tool as ``tools/list`` describes it."""

    name: str
    description: str
    input_schema: dict[str, Any]


def _function_name(tool: str) -> str:
    # OpenAI function names may not contain dots.
    return tool.replace(".", "__")


def _tool_payload(tools: list[ToolDescription]) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {
                "name": _function_name(tool.name),
                "description": tool.description,
                "parameters": tool.input_schema,
            },
        }
        for tool in tools
    ]


async def run_openai(
    tools: ToolCaller,
    gateway: ChatGateway,
    available: list[ToolDescription],
    *,
    max_turns: int,
    model: str = "default",
) -> ProviderReport:
    """Drive the oracle's tools with the model until it stops; :class:`GatewayRefused` if the gateway
    refuses a request (its turn limit refuses the request after the last allowed turn)."""
    report = ProviderReport(provider="openai")
    by_function = {_function_name(tool.name): tool.name for tool in available}
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": MEMORY_ORACLE.prompt},
        {
            "role": "user",
            "content": "Review the proposal bound to your capability, following your instructions.",
        },
    ]
    # One request more than the turn limit: the gateway, which enforces the limit, refuses it.
    for _turn in range(max_turns + 1):
        response = await gateway.complete(
            {"model": model, "messages": messages, "tools": _tool_payload(available), "tool_choice": "auto"}
        )
        choice = (response.get("choices") or [{}])[0]
        message = choice.get("message") or {}
        calls = message.get("tool_calls") or []
        messages.append({"role": "assistant", "content": message.get("content"), "tool_calls": calls or None})
        if not calls:
            if message.get("content"):
                report.notes.append(str(message["content"])[:2000])
            return report
        for call in calls:
            messages.append(await _run_call(tools, by_function, call, report))
    raise GatewayRefused("budget_exhausted", f"the model was still calling tools after {max_turns + 1} turns")


async def _run_call(
    tools: ToolCaller, by_function: dict[str, str], call: dict[str, Any], report: ProviderReport
) -> dict[str, Any]:
    function = call.get("function") or {}
    name = by_function.get(str(function.get("name")))
    call_id = call.get("id", "")
    if name is None:
        body: dict[str, Any] = {"error": {"code": "forbidden", "message": "no such tool for this role"}}
    else:
        try:
            body = await tools.call(name, _arguments(function.get("arguments")))
        except ValueError as exc:
            body = {"error": {"code": "invalid_argument", "message": f"arguments are not valid JSON: {exc}"}}
        except ToolCallError as exc:
            body = {"error": {"code": exc.code, "message": exc.message}}
        else:
            if name == "oracle.warn" and "event" in body:
                report.warnings.append(body["event"])
            if name == "memory.record" and "entry" in body and body["entry"].get("kind") == "summary":
                report.summary_memory_id = str(body["entry"]["id"])
    return {"role": "tool", "tool_call_id": call_id, "content": json.dumps(body)[:60_000]}


def _arguments(text: object) -> dict[str, Any]:
    """A tool call's arguments as the model wrote them, or ``ValueError`` saying why not."""
    try:
        arguments = json.loads(text or "{}") if isinstance(text, str | None) else text
    except RecursionError:  # "[[[[...": json.loads does not say ValueError here
        raise ValueError(f"nested more than {_MAX_ARGUMENT_DEPTH} levels deep") from None
    if not isinstance(arguments, dict):
        raise ValueError("arguments must be a JSON object")
    pending: list[tuple[Any, int]] = [(arguments, 1)]
    while pending:  # iterative: the check cannot run out of stack itself
        item, depth = pending.pop()
        if isinstance(item, dict | list):
            if depth > _MAX_ARGUMENT_DEPTH:
                raise ValueError(f"nested more than {_MAX_ARGUMENT_DEPTH} levels deep")
            children = item.values() if isinstance(item, dict) else item
            pending.extend((child, depth + 1) for child in children)
    return arguments
