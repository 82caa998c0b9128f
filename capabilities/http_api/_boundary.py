"""What every API request goes through before the store: who calls, as whom, with what.

- :func:`caller_of`: the principal the bearer middleware authenticated, if the policy lets it
  make the call a route stands for (each route is checked as the MCP tool it mirrors, so an agent
  token may do on the API exactly what it may do on MCP); :func:`operator_of` for the routes only
  operators may use. Role capabilities use MCP and get 403 ``forbidden`` here;
- :func:`mutation_context`: for a mutation, also the ``X-Actor-ID`` header, which must be
  nonblank (400 ``invalid_argument`` when missing or blank) and equal to the token's name (an
  operator's, or an agent token's agent; 403 ``forbidden`` otherwise: the header never decides
  who acts), the JSON body (an object, at most
  :data:`MAX_BODY_BYTES`, read by :func:`store.parse_json`: no NaN/Infinity, nested at most
  :data:`store.MAX_JSON_DEPTH` deep; no unpaired surrogates) and the ``Idempotency-Key``
  claim, whose request hash covers the method, path, query and canonical body;
- query parameter parsers that answer 400 ``invalid_argument`` instead of raising.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from starlette.requests import Request

from capabilities.mcp import PRINCIPAL_SCOPE_KEY
from capabilities.policy import is_allowed
from capabilities.principals import Principal, PrincipalKind
from store import check_int, parse_json
from store.errors import Forbidden, InvalidArgument, Unauthenticated
from store.events import IdempotencyClaim

__all__ = [
    "ACTOR_HEADER",
    "IDEMPOTENCY_HEADER",
    "MAX_BODY_BYTES",
    "MutationContext",
    "caller_of",
    "mutation_context",
    "operator_of",
    "parse_model",
    "principal_of",
    "query_bool",
    "query_int",
    "query_text",
]

ACTOR_HEADER = "x-actor-id"
IDEMPOTENCY_HEADER = "idempotency-key"
MAX_BODY_BYTES = 1024 * 1024
_KEY_SHAPE = re.compile(r"[\x21-\x7e]{1,200}")
_Model = TypeVar("_Model", bound=BaseModel)


def principal_of(request: Request) -> Principal:
    """Whoever the bearer middleware authenticated for this request, or 401."""
    principal = request.scope.get(PRINCIPAL_SCOPE_KEY)
    if not isinstance(principal, Principal):
        raise Unauthenticated("missing Authorization: Bearer header")
    return principal


def operator_of(request: Request) -> Principal:
    """The operator behind this request, or 401/403."""
    principal = principal_of(request)
    if not principal.is_operator:
        raise Forbidden("only operator tokens may use this route")
    return principal


def caller_of(request: Request, tool: str) -> Principal:
    """The caller, if the policy lets it make the call ``tool`` (the MCP tool the route mirrors); else 403."""
    principal = principal_of(request)
    if principal.kind is PrincipalKind.CAPABILITY:
        raise Forbidden("the HTTP API serves operator and agent tokens; role capabilities use MCP")
    if not is_allowed(principal, tool):
        raise Forbidden(f"this route is {tool}, which a {principal.role} may not use")
    return principal


@dataclass(frozen=True)
class MutationContext:
    """A checked mutation request: its actor, JSON body and idempotency claim."""

    actor: str
    body: dict[str, Any]
    claim: IdempotencyClaim | None
    principal: Principal


def _check_strings(value: Any) -> None:
    # Recursive, but parse_json has bounded the depth already (MAX_JSON_DEPTH).
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidArgument("the request body holds an unpaired surrogate") from None
    elif isinstance(value, list):
        for item in value:
            _check_strings(item)
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_strings(key)
            _check_strings(item)


async def _json_body(request: Request) -> dict[str, Any]:
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise InvalidArgument(f"the request body is larger than {MAX_BODY_BYTES} bytes")
        chunks.append(chunk)
    raw = b"".join(chunks)
    if not raw.strip():
        return {}
    value = parse_json("the request body", raw)  # strict JSON, nested at most MAX_JSON_DEPTH deep
    if not isinstance(value, dict):
        raise InvalidArgument("the request body must be a JSON object")
    _check_strings(value)
    return value


def _request_hash(request: Request, body: dict[str, Any]) -> str:
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"))
    query = "&".join(sorted(f"{k}={v}" for k, v in request.query_params.multi_items()))
    digest = hashlib.sha256()
    for part in (request.method, request.url.path, query, canonical):
        digest.update(part.encode("utf-8", "surrogatepass"))
        digest.update(b"\x00")
    return digest.hexdigest()


async def mutation_context(request: Request, tool: str | None = None) -> MutationContext:
    """Check a mutation's caller, actor header, body and idempotency key (in that order).

    ``tool``: the MCP tool the route mirrors (``None``: an operator-only route).
    """
    principal = operator_of(request) if tool is None else caller_of(request, tool)
    actor = request.headers.get(ACTOR_HEADER)
    if actor is None or not actor.strip():
        raise InvalidArgument(
            "mutations need a nonblank X-Actor-ID header naming the token's operator or agent"
        )
    if actor.strip() != principal.name:
        raise Forbidden("X-Actor-ID does not match the operator or agent this token was issued to")
    body = await _json_body(request)
    key = request.headers.get(IDEMPOTENCY_HEADER)
    claim = None
    if key is not None:
        if not _KEY_SHAPE.fullmatch(key):
            raise InvalidArgument("Idempotency-Key must be 1-200 visible ASCII characters")
        claim = IdempotencyClaim(
            # Agents and operators never share a key space, whatever an operator token is called.
            actor=principal.name if principal.is_operator else f"agent:{principal.name}",
            key=key,
            route=f"{request.method} {request.url.path}",
            request_sha256=_request_hash(request, body),
        )
    return MutationContext(actor=principal.name, body=body, claim=claim, principal=principal)


def parse_model(
    model: type[_Model],
    body: dict[str, Any],
    *,
    error: type[InvalidArgument] = InvalidArgument,
    field_errors: dict[str, type[InvalidArgument]] | None = None,
) -> _Model:
    """Validate ``body`` against a strict pydantic model; the first problem becomes ``error`` (a 400).

    ``field_errors`` gives some fields their own error (``expected_revision`` ->
    :class:`~store.errors.InvalidExpectedRevision`).
    """
    try:
        return model.model_validate(body)
    except ValidationError as exc:
        first = exc.errors()[0]
        location = ".".join(str(part) for part in first["loc"]) or "body"
        field = str(first["loc"][0]) if first["loc"] else ""
        chosen = (field_errors or {}).get(field, error)
        raise chosen(f"{location}: {first['msg']}") from None


def query_text(request: Request, name: str, *, limit: int = 1000) -> str | None:
    """An optional query parameter (exactly one occurrence)."""
    values = request.query_params.getlist(name)
    if not values:
        return None
    if len(values) > 1:
        raise InvalidArgument(f"query parameter {name!r} is given more than once")
    if len(values[0]) > limit or "\x00" in values[0]:
        raise InvalidArgument(f"query parameter {name!r} is too long or holds NUL")
    return values[0]


def query_int(request: Request, name: str, *, default: int | None = None) -> int | None:
    """An optional integer query parameter."""
    text = query_text(request, name, limit=40)
    if text is None or text == "":
        return default
    if not re.fullmatch(r"[+-]?[0-9]{1,19}", text.strip()):
        raise InvalidArgument(f"query parameter {name!r} must be an integer")
    return check_int(name, int(text))  # 19 digits can pass SQLite's 64-bit range


def query_bool(request: Request, name: str) -> bool:
    """An optional boolean query parameter (``true``/``false``/``1``/``0``; default false)."""
    text = query_text(request, name, limit=10)
    if text is None or text == "":
        return False
    lowered = text.strip().lower()
    if lowered in ("true", "1", "yes"):
        return True
    if lowered in ("false", "0", "no"):
        return False
    raise InvalidArgument(f"query parameter {name!r} must be true or false")
