"""The oracle-feedback routes of ``/api/v1``: a maintainer's verdict on a warning, and the stats.

``POST /warnings/{event_id}/feedback`` takes ``{verdict, reason?}`` like every mutation (bearer
operator token, ``X-Actor-ID``, optional ``Idempotency-Key``) and answers 201 ``{"event"}``: one
``memory.oracle_feedback`` event and its audit row, committed together; the warning itself is never
changed. ``GET /oracle/stats`` answers the counts and precision per provider. The semantics live in
:mod:`store._feedback`; the handlers are module-level and read :class:`ApiState` as the others do.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictStr
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from capabilities.http_api._boundary import mutation_context, parse_model
from capabilities.http_api._errors import endpoint
from capabilities.http_api._memories import _commit
from capabilities.http_api._state import api_state, operator_api
from store import MAX_REASON_CHARS, TEXT_PATTERN, OracleFeedback, parse_decimal
from store.errors import InvalidArgument

__all__ = ["FEEDBACK_ROUTES", "FEEDBACK_SCHEMAS", "FeedbackCreate"]


class FeedbackCreate(BaseModel):
    """``POST /warnings/{event_id}/feedback``."""

    model_config = ConfigDict(extra="forbid", strict=True)

    verdict: Literal["confirmed", "dismissed"] = Field(description="whether the warning was right")
    reason: StrictStr | None = Field(
        default=None,
        max_length=MAX_REASON_CHARS,
        json_schema_extra={"pattern": TEXT_PATTERN},
        description=f"optional, at most {MAX_REASON_CHARS} characters: why",
    )


_STATS_FIELDS: dict[str, Any] = {
    "provider": {"type": "string"},
    "warnings": {"type": "integer"},
    "confirmed": {"type": "integer"},
    "dismissed": {"type": "integer"},
    "unreviewed": {"type": "integer"},
    "precision": {"type": ["number", "null"], "description": "confirmed / (confirmed + dismissed)"},
}
FEEDBACK_SCHEMAS: dict[str, Any] = {
    "FeedbackAnswer": {
        "type": "object",
        "required": ["event"],
        "properties": {"event": {"$ref": "#/components/schemas/Event"}},
    },
    "OracleStats": {
        "type": "object",
        "required": ["providers"],
        "properties": {
            "providers": {
                "type": "array",
                "items": {"type": "object", "required": list(_STATS_FIELDS), "properties": _STATS_FIELDS},
            }
        },
    },
}
"""The component schemas of the two routes' answers."""


def _event_id(request: Request) -> int:
    event_id = parse_decimal(str(request.path_params["event_id"]))
    if event_id is None:
        raise InvalidArgument("the warning's event ID must be a positive integer")
    return event_id


async def give_feedback(request: Request) -> Response:
    """``POST /warnings/{event_id}/feedback``: confirm or dismiss an oracle warning."""
    ctx = await mutation_context(request)
    api = api_state(request)
    event_id = _event_id(request)
    body = parse_model(FeedbackCreate, ctx.body)
    feedback = OracleFeedback(api.store.db)
    return await _commit(
        api,
        feedback.give,
        event_id,
        body.verdict,
        actor=ctx.actor,
        reason=body.reason,
        audit=True,
        claim=ctx.claim,
    )


async def oracle_stats(request: Request) -> Response:
    """``GET /oracle/stats``: warnings, verdicts and precision per provider."""
    api = operator_api(request)
    return await api.answer(OracleFeedback(api.store.db).stats)


FEEDBACK_ROUTES: list[Route] = [
    Route("/warnings/{event_id}/feedback", endpoint(give_feedback), methods=["POST"]),
    Route("/oracle/stats", endpoint(oracle_stats), methods=["GET"]),
]
"""The oracle-feedback routes, relative to ``/api/v1``."""
