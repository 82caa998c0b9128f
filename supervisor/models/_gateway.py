"""The model gateway: how a role container reaches a real model without network or credentials.

A container has no network. For the ``openai`` provider, the runner posts chat-completions
requests to ``/model/v1/chat/completions`` on its own launch socket, authenticated by the launch's
grant like every other request there (the route exists only on ``openai`` launches). The
supervisor forwards each request to the configured OpenAI-compatible server with the API key read
from the supervisor's environment — the key never enters the container — and enforces the
launch's limits: only known fields are forwarded (never ``stream``, ``n`` or other ways to spend
outside the accounting), ``max_tokens`` is capped to what remains of the token budget, at most
``max_turns`` requests go upstream, and once either is spent every further request is refused with
429 ``budget_exhausted``. Usage is accumulated for the launch record.

The gateway is also the authority on why a launch's model calls failed: it records the first
failure it saw (:attr:`ModelGateway.failure`) as a :class:`ModelFailure` — ``model_unavailable``
(the server could not be reached), ``model_error`` (it answered non-200, or not a chat completion)
or ``budget_exhausted`` — and answers the role with the same code. The supervisor ends the launch
``failed`` with that reason and message, whatever the container says about itself. Messages name
the server's address and status, never the API key.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio
import structlog

from store import parse_decimal, parse_json
from store.config import OpenAIProviderConfig
from store.errors import BudgetExhausted, InvalidArgument, ModelError, ModelUnavailable, RoundtableError

if TYPE_CHECKING:  # Starlette is imported when a launch that uses the model builds its route
    import httpx2
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

__all__ = ["GATEWAY_PATH", "ModelFailure", "ModelGateway", "ModelUsage"]

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


@dataclass(frozen=True)
class ModelFailure:
    """The first failure the gateway saw on a launch: its ``reason`` (an error code) and message."""

    reason: str
    message: str


def _error(exc: RoundtableError, status: int | None = None) -> JSONResponse:
    from starlette.responses import JSONResponse

    body = {"error": {"code": exc.code, "message": exc.message}}
    return JSONResponse(body, status_code=status or exc.http_status)


# What a role may ask of the model. Everything else (stream, n, max_completion_tokens, logit_bias,
# ...) is dropped: each could make the upstream spend outside the budget or the accounting.
_FORWARDED_FIELDS = ("messages", "tools", "tool_choice", "temperature", "top_p", "stop", "seed")


@dataclass
class ModelGateway:
    """Forwards one launch's chat-completions requests, within its token budget and turn limit.

    Budget accounting is conservative: before a request goes upstream its completion allowance is
    reserved (so concurrent requests cannot all see the whole budget), and afterwards the reported
    usage is charged; an answer that is not a 200 with JSON is charged the whole reservation.
    """

    config: OpenAIProviderConfig
    launch_id: str
    usage: ModelUsage = field(default_factory=ModelUsage)
    transport: httpx2.AsyncBaseTransport | None = None
    failure: ModelFailure | None = None
    """The first failure seen (set once; later ones do not replace it)."""
    _reserved: int = 0
    _started: int = 0
    _lock: anyio.Lock = field(default_factory=anyio.Lock)

    def route(self) -> Route:
        """The Starlette route to add to the launch's app."""
        from starlette.routing import Route

        return Route(GATEWAY_PATH, self.handle, methods=["POST"])

    @property
    def remaining(self) -> int:
        """Tokens neither spent nor reserved by a request in flight."""
        return max(0, self.config.max_tokens - self.usage.total_tokens - self._reserved)

    async def handle(self, request: Request) -> JSONResponse:
        """Forward one request (the auth middleware has already checked the grant)."""
        body_bytes = await _read_bounded(request)
        if body_bytes is None:
            return _error(InvalidArgument("the request is larger than 4 MiB"), 413)
        try:
            body = parse_json("the request", body_bytes)
        except InvalidArgument as exc:  # not JSON, or nested past MAX_JSON_DEPTH (never a 500)
            return _error(exc)
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            return _error(InvalidArgument("a chat-completions request needs a messages list"))
        async with self._lock:
            refusal = self._refusal()
            if refusal is not None:
                self.usage.refused += 1
                return self._fail(BudgetExhausted(refusal))
            requested = body.get("max_tokens")
            allowance = self.remaining
            if isinstance(requested, int) and not isinstance(requested, bool) and requested > 0:
                allowance = min(requested, allowance)
            self._reserved += allowance
            self._started += 1
        forwarded: dict[str, Any] = {key: body[key] for key in _FORWARDED_FIELDS if key in body}
        forwarded.update(model=self.config.model, max_tokens=allowance, stream=False, n=1)
        # Until the server says otherwise, assume the whole allowance was spent.
        prompt, completion = 0, allowance
        server = self.config.base_url
        import httpx2  # only a launch that calls the model pays for the HTTP client

        try:
            try:
                response = await self._post(forwarded)
            except httpx2.ConnectError:
                prompt, completion = 0, 0  # it never reached the server: nothing was spent
                return self._fail(ModelUnavailable(f"the model server at {server} is unreachable"))
            except httpx2.TimeoutException:
                return self._fail(ModelUnavailable(f"the model server at {server} timed out"))
            except httpx2.HTTPError as exc:
                _log.warning("model_failed", launch_id=self.launch_id, error=type(exc).__name__)
                return self._fail(
                    ModelUnavailable(f"the model server at {server} failed: {type(exc).__name__}")
                )
            try:
                answer = parse_json("the answer", response.content)
            except InvalidArgument:
                answer = None  # not a chat completion either: a model_error below
            if response.status_code != 200:
                return self._fail(ModelError(f"the model server at {server} answered {response.status_code}"))
            if not _is_completion(answer):
                return self._fail(
                    ModelError(f"the model server at {server} answered 200 with no chat completion")
                )
            assert isinstance(answer, dict)
            reported_raw = answer.get("usage")
            reported: dict[str, Any] = reported_raw if isinstance(reported_raw, dict) else {}
            prompt, completion = (
                _count(reported.get("prompt_tokens")),
                _count(reported.get("completion_tokens")),
            )
            if prompt + completion == 0:
                # A server that reports no usage still spends the budget: estimate 4 bytes a token.
                prompt, completion = len(body_bytes) // 4, len(response.content) // 4
            from starlette.responses import JSONResponse

            return JSONResponse(answer)
        finally:
            async with self._lock:
                self._reserved -= allowance
                self.usage.requests += 1
                self.usage.prompt_tokens += prompt
                self.usage.completion_tokens += completion
            _log.info("model_call", launch_id=self.launch_id, total_tokens=self.usage.total_tokens)

    def _fail(self, exc: RoundtableError) -> JSONResponse:
        """Record ``exc`` as the launch's failure if it is the first, and answer the role with it."""
        message = exc.message
        api_key = os.environ.get(self.config.api_key_env, "")
        if api_key:
            message = message.replace(api_key, "[redacted]")
            exc = type(exc)(message)
        if self.failure is None:
            self.failure = ModelFailure(reason=exc.code, message=message)
            _log.warning("model_gateway_failure", launch_id=self.launch_id, reason=exc.code, error=message)
        return _error(exc)

    def _refusal(self) -> str | None:
        """Why the next request may not go upstream, if it may not."""
        if self._started >= self.config.max_turns:
            return f"the launch's limit of {self.config.max_turns} model turns is reached"
        if self.remaining <= 0:
            return f"the launch's budget of {self.config.max_tokens} tokens is spent"
        return None

    async def _post(self, forwarded: dict[str, Any]) -> httpx2.Response:
        api_key = os.environ.get(self.config.api_key_env, "")
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        url = self.config.base_url.rstrip("/") + "/chat/completions"
        import httpx2

        async with httpx2.AsyncClient(transport=self.transport, timeout=300) as client:
            return await client.post(url, json=forwarded, headers=headers)


async def _read_bounded(request: Request) -> bytes | None:
    """The request body, or ``None`` once it passes the limit (read no further than that)."""
    declared = request.headers.get("content-length")
    if declared is not None:
        size = parse_decimal(declared)
        if size is None or size > _MAX_REQUEST_BYTES:
            return None
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > _MAX_REQUEST_BYTES:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def _is_completion(answer: object) -> bool:
    """Whether ``answer`` has the shape of a chat completion: an object with a non-empty choices list."""
    if not isinstance(answer, dict):
        return False
    choices = answer.get("choices")
    return isinstance(choices, list) and bool(choices) and isinstance(choices[0], dict)


def _count(value: Any) -> int:
    return value if isinstance(value, int) and value > 0 else 0
