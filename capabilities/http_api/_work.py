"""The work routes of ``/api/v1``: proposals, their timelines and patches, and the event log.

All read-only, each checked as the MCP tool it mirrors (``proposal.list``, ``proposal.get``,
``proposal.timeline``, ``patch.inspect``; the whole event log is for operators). Proposal lists page
with an opaque cursor (the store's position, wrapped); the patch route answers the stored bytes as
``text/plain`` after the safe reader has checked them against the SHA-256 in the database; ``GET
/events?after=ID`` pages forward through the log.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from capabilities.http_api._boundary import mutation_context, query_int, query_text
from capabilities.http_api._errors import endpoint, json_response
from capabilities.http_api._state import api_for, api_state, operator_api
from capabilities.mcp import call_tool
from capabilities.mcp.tools import build_registry
from store import Store
from store.errors import InvalidArgument

__all__ = ["MAX_PROPOSAL_PAGE", "WORK_ROUTES", "proposal_detail"]

MAX_PROPOSAL_PAGE = 200
_CURSOR_PREFIX = "proposal:"


def _encode(position: str) -> str:
    return base64.urlsafe_b64encode((_CURSOR_PREFIX + position).encode()).decode().rstrip("=")


def _decode(cursor: str) -> str:
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode("utf-8")
    except (binascii.Error, ValueError):
        raise InvalidArgument("cursor is not one this API returned") from None
    if not text.startswith(_CURSOR_PREFIX) or len(text) == len(_CURSOR_PREFIX):
        raise InvalidArgument("cursor is not one this API returned")
    return text.removeprefix(_CURSOR_PREFIX)


def proposal_detail(store: Store, proposal_id: str) -> dict[str, Any]:
    """``{"proposal", "votes", "consensus"}``: the proposal with every vote and whether it counts."""
    proposal = store.proposals.get(proposal_id)
    votes, consensus = store.reviews.list(proposal_id=proposal_id)
    return {"proposal": proposal, "votes": [vote.to_dict() for vote in votes], "consensus": consensus}


async def list_proposals(request: Request) -> Response:
    """``GET /proposals``: the proposals, paged by an opaque cursor."""
    api = api_for(request, "proposal.list")
    limit = query_int(request, "limit", default=50)
    assert limit is not None
    if not 1 <= limit <= MAX_PROPOSAL_PAGE:
        raise InvalidArgument(f"limit must be an integer from 1 to {MAX_PROPOSAL_PAGE}")
    cursor = query_text(request, "cursor")
    items, position = await api.run(
        api.store.proposals.list,
        task_id=query_text(request, "task_id"),
        status=query_text(request, "status"),
        limit=limit,
        cursor=_decode(cursor) if cursor else None,
    )
    return json_response({"items": items, "next_cursor": None if position is None else _encode(position)})


async def get_proposal(request: Request) -> Response:
    """``GET /proposals/{proposal_id}``: a proposal with its votes and consensus."""
    api = api_for(request, "proposal.get")
    return await api.answer(proposal_detail, api.store, request.path_params["proposal_id"])


async def timeline(request: Request) -> Response:
    """``GET /proposals/{proposal_id}/timeline``: everything that happened to a proposal."""
    api = api_for(request, "proposal.timeline")
    return await api.answer(api.store.timeline.timeline, request.path_params["proposal_id"])


async def patch(request: Request) -> Response:
    """``GET /proposals/{proposal_id}/patch``: one patch version's verified bytes, as text."""
    api = api_for(request, "patch.inspect")
    version = query_int(request, "version")
    record, data = await api.run(api.store.proposals.patch, request.path_params["proposal_id"], version)
    return Response(
        data,
        media_type="text/plain; charset=utf-8",
        headers={
            "x-patch-version": str(record.version),
            "x-patch-sha256": record.sha256,
            "cache-control": "no-store",
            "x-content-type-options": "nosniff",
        },
    )


async def events(request: Request) -> Response:
    """``GET /events?after=ID``: the event log, paged forward."""
    api = operator_api(request)
    after = query_int(request, "after", default=0)
    limit = query_int(request, "limit", default=100)
    assert after is not None
    assert limit is not None
    proposal_id = query_text(request, "proposal_id", limit=200)
    found = await api.run(api.store.event_feed.after, after, limit=limit, proposal_id=proposal_id or None)
    last = found[-1].id if found else after
    return json_response(
        {"items": [event.to_dict() for event in found], "next_after": last, "more": len(found) == limit}
    )


async def review_run(request: Request) -> Response:
    """``POST /proposals/{proposal_id}/review-run``: run a review round (the ``review.run`` tool).

    Answers when every launch has ended, with the same body as the tool; an operator mutation
    (``X-Actor-ID``), without idempotency keys: running a round again runs it again.
    """
    ctx = await mutation_context(request, "review.run")
    api = api_state(request)
    arguments = {"proposal_id": request.path_params["proposal_id"]}
    outcome = await call_tool(api.services, build_registry(), ctx.principal, "review.run", arguments)
    if outcome.error is not None:
        raise outcome.error
    api.changed()
    return json_response(outcome.body())


_ITEM = "/proposals/{proposal_id}"
WORK_ROUTES: list[Route] = [
    Route("/proposals", endpoint(list_proposals), methods=["GET"]),
    Route(_ITEM, endpoint(get_proposal), methods=["GET"]),
    Route(f"{_ITEM}/timeline", endpoint(timeline), methods=["GET"]),
    Route(f"{_ITEM}/patch", endpoint(patch), methods=["GET"]),
    Route(f"{_ITEM}/review-run", endpoint(review_run), methods=["POST"]),
    Route("/events", endpoint(events), methods=["GET"]),
]
"""The work routes, relative to ``/api/v1``."""
