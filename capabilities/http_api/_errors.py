"""The one JSON error shape of the HTTP API: ``{"error": {"code", "message"}}``.

:func:`endpoint` wraps every route handler: a :class:`~store.errors.RoundtableError` becomes its
``http_status`` with the body :func:`store.errors.error_body` builds for the CLI and MCP too;
anything unexpected becomes 500 ``internal`` with a message that carries no traceback (the
traceback goes to the server log).
Starlette's own 404 and 405 inside ``/api/v1`` answer in the same shape (:data:`EXCEPTION_HANDLERS`).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import structlog
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from capabilities.mcp import PRINCIPAL_SCOPE_KEY
from capabilities.principals import Principal
from store.errors import (
    InternalError,
    InvalidArgument,
    MethodNotAllowed,
    NotFound,
    RoundtableError,
    error_body,
)
from store.events import acting_credential

__all__ = [
    "EXCEPTION_HANDLERS",
    "encode_json",
    "encoded",
    "endpoint",
    "error_response",
    "json_response",
]

_log = structlog.get_logger("roundtable.http")

Handler = Callable[[Request], Awaitable[Response]]


_SECURITY_HEADERS = {"cache-control": "no-store", "x-content-type-options": "nosniff"}


def encode_json(body: Mapping[str, Any]) -> bytes:
    """The bytes of a JSON answer."""
    return json.dumps(body, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode("utf-8")


def encoded(fn: Callable[..., Mapping[str, Any]], /, *args: Any, **kwargs: Any) -> bytes:
    """Call ``fn`` and encode its answer: run it through ``Database.run`` so that a large answer is
    built *and* serialised on a worker thread, never on the event loop."""
    return encode_json(fn(*args, **kwargs))


def json_response(
    body: Mapping[str, Any] | bytes, status: int = 200, headers: Mapping[str, str] | None = None
) -> Response:
    """A JSON answer (never cached: every answer depends on the caller and the moment)."""
    return Response(
        body if isinstance(body, bytes) else encode_json(body),
        status_code=status,
        media_type="application/json",
        headers={**_SECURITY_HEADERS, **(headers or {})},
    )


def error_response(exc: RoundtableError) -> Response:
    """The JSON error answer for ``exc``."""
    return json_response(error_body(exc), exc.http_status)


def endpoint(handler: Handler) -> Handler:
    """Translate every error a handler raises into the one JSON error shape."""

    @functools.wraps(handler)
    async def wrapped(request: Request) -> Response:
        principal = request.scope.get(PRINCIPAL_SCOPE_KEY)
        try:
            # Every event and audit row the request writes names the credential it came through.
            with acting_credential(principal.credential_id if isinstance(principal, Principal) else None):
                return await handler(request)
        except InternalError as exc:  # a failure, not a refusal: the log keeps the chained cause
            _log.exception("http.failed", path=request.url.path, method=request.method)
            return error_response(exc)
        except RoundtableError as exc:
            return error_response(exc)
        except Exception:  # the boundary: log the traceback, answer without it
            _log.exception("http.unexpected_error", path=request.url.path, method=request.method)
            return error_response(InternalError("the request failed unexpectedly; see the server log"))

    return wrapped


async def _http_exception(request: Request, exc: Exception) -> Response:
    status = getattr(exc, "status_code", 500)
    if status == 405:
        return error_response(MethodNotAllowed(f"{request.method} is not allowed on {request.url.path}"))
    if status == 404:
        return error_response(NotFound(f"no API route at {request.url.path}"))
    if 400 <= status < 500:
        return error_response(InvalidArgument(str(getattr(exc, "detail", "bad request"))))
    return error_response(InternalError("the request failed unexpectedly"))


EXCEPTION_HANDLERS: dict[Any, Callable[[Request, Exception], Awaitable[Response]]] = {
    HTTPException: _http_exception
}
"""Exception handlers for the ``/api/v1`` sub-application."""
