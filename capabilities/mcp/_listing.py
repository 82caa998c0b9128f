"""What the MCP servers say, as plain JSON: the instructions, the tool list a principal sees, a tool
call's result.

Both servers build their answers here: the SDK's (:class:`~capabilities.mcp.RoundtableMCPServer`,
which wraps these dicts in its models) and the lean launch socket server
(:mod:`capabilities.serving._lean_mcp`, which writes them as they are), so the two cannot drift.
Nothing here imports the MCP SDK.
"""

from __future__ import annotations

import json
from typing import Any

import pydantic_core

from capabilities.mcp._names import ToolNames, ToolNaming
from capabilities.mcp._registry import ToolRegistry
from capabilities.policy import toolset_for
from capabilities.principals import Principal

__all__ = [
    "INSTRUCTIONS",
    "PRINCIPAL_SCOPE_KEY",
    "SERVER_NAME",
    "message_json",
    "result_text",
    "tool_call_json",
    "tool_entries",
    "tool_result_json",
]

PRINCIPAL_SCOPE_KEY = "roundtable.principal"
"""Where the HTTP authentication middleware leaves the principal in the ASGI scope."""

SERVER_NAME = "roundtable"
"""The ``serverInfo`` name."""

INSTRUCTIONS = (
    "Roundtable: proposals, votes and durable project memory for teams of coding agents. "
    "Query memory for prior decisions and constraints before proposing work."
)
"""The server's instructions to its clients."""


def tool_entries(
    registry: ToolRegistry, principal: Principal | None, naming: ToolNaming, *, fresh: bool = True
) -> list[dict[str, Any]]:
    """The ``tools/list`` entries ``principal`` may call, and nothing else, named as ``naming`` says.

    Each schema is a fresh copy, for a caller that keeps or edits what it is given (the SDK builds
    its models from them); ``fresh=False`` gives the registry's cached schemas themselves, for a
    caller that writes the entries out as JSON at once and keeps nothing (the lean launch socket):
    deep-copying an oracle's six schemas took ~2.4 ms of each launch's ``tools/list``, writing them 0.1 ms."""
    allowed = toolset_for(principal)
    return [
        {
            "name": ToolNames.listed(spec.name, naming),
            "title": spec.title,
            "description": spec.description,
            "inputSchema": spec.input_schema(fresh=fresh),
            "outputSchema": spec.output_schema(fresh=fresh),
            "annotations": {
                "readOnlyHint": spec.read_only,
                "destructiveHint": spec.destructive,
                "idempotentHint": spec.idempotent,
                "openWorldHint": False,
            },
        }
        for spec in registry.specs_of(allowed)  # only the allowed tools' modules are imported
    ]


def result_text(body: dict[str, Any]) -> str:
    """A tool answer's JSON as text content.

    Written by pydantic's serializer, several times faster than ``json.dumps`` on a large answer
    (20 memory entries: ~35 kB); ``json.dumps`` takes what it refuses.
    """
    try:
        return pydantic_core.to_json(body).decode()
    except (pydantic_core.PydanticSerializationError, UnicodeDecodeError):
        return json.dumps(body, ensure_ascii=False, sort_keys=True)


def message_json(message: dict[str, Any]) -> bytes:
    """A JSON-RPC message as compact JSON bytes, as ``json.dumps(message, separators=(",", ":"))``
    writes it but for non-ASCII text, written as UTF-8 rather than escaped (the same JSON values).

    Written by pydantic's serializer: a ``memory.query`` answer holds its entries twice (as
    ``structuredContent`` and as the text content's string), ~55 kB for 20 entries, which
    ``json.dumps`` took ~0.12 ms to write and this ~0.03 ms. Floats, ``Infinity`` and ``NaN`` are
    written as ``json.dumps`` writes them; ``json.dumps`` takes what pydantic refuses (a lone
    surrogate).
    """
    try:
        return pydantic_core.to_json(message, inf_nan_mode="constants")
    except pydantic_core.PydanticSerializationError:
        return json.dumps(message, separators=(",", ":")).encode()


def tool_result_json(body: dict[str, Any], *, is_error: bool) -> dict[str, Any]:
    """A ``tools/call`` result: the answer as ``structuredContent`` and the same JSON as text content."""
    return {
        "content": [{"type": "text", "text": result_text(body)}],
        "structuredContent": body,
        "isError": is_error,
    }


def tool_call_json(
    request_id: int | str, body: dict[str, Any], *, is_error: bool, extra: dict[str, Any]
) -> bytes:
    """The JSON-RPC response to a ``tools/call``: :func:`message_json` of ``{"jsonrpc", "id",
    "result": {**tool_result_json(body, is_error=is_error), **extra}}``, the same JSON, keys in
    the same order, with the answer serialized once.

    The answer's JSON is its text content, and the same bytes, spliced in, its
    ``structuredContent``: writing the answer a second time cost as much as the first (a
    ``memory.query`` of every entry, ``limit`` 0: ~2 MB, ~3 ms each). An answer pydantic refuses
    (a lone surrogate) takes :func:`message_json`'s whole path.
    """
    try:
        answer = pydantic_core.to_json(body)
        text = answer.decode()
    except (pydantic_core.PydanticSerializationError, UnicodeDecodeError):
        result = {**tool_result_json(body, is_error=is_error), **extra}
        return message_json({"jsonrpc": "2.0", "id": request_id, "result": result})
    content = {"content": [{"type": "text", "text": text}]}
    head = message_json({"jsonrpc": "2.0", "id": request_id, "result": content})  # ...]}}
    rest = message_json({"isError": is_error, **extra})  # {"isError":...}
    return b"".join((head[:-2], b',"structuredContent":', answer, b",", rest[1:], b"}"))
