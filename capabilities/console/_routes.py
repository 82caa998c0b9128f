"""The console's route table, its read-only pages, its static files and its live event stream.

The pages render through :mod:`capabilities.console._pages` on a worker thread; the forms that
change something are in :mod:`capabilities.console._forms`.
"""

from __future__ import annotations

from functools import cache
from importlib import resources

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from capabilities.console._forms import (
    login,
    login_page,
    logout,
    memory_action,
    memory_revise,
    warning_feedback,
)
from capabilities.console._frame import console_auth, layout, page
from capabilities.console._html import html
from capabilities.console._memory_pages import memory_page, memory_search_page
from capabilities.console._pages import proposal_page, proposals_page
from capabilities.console._session import LoginRequired
from capabilities.http_api import EventStreamEndpoint, api_state
from store.access import ConsoleSession
from store.errors import Unauthenticated

__all__ = ["CONSOLE_ROUTES"]

_NOTICES = {
    "pin": "Pinned.",
    "unpin": "Unpinned.",
    "archive": "Archived.",
    "restore": "Restored.",
    "resynthesize": "Resynthesis requested.",
    "revised": "Revision saved.",
}
_STATIC_TYPES = {"console.css": "text/css; charset=utf-8", "console.js": "text/javascript; charset=utf-8"}


@page
async def proposals(request: Request, session: ConsoleSession) -> Response:
    """``GET /``: the proposals with status and consensus."""
    api = api_state(request)
    cursor = request.query_params.get("cursor")
    title, body = await api.run(proposals_page, api.store, cursor=cursor)
    last = await api.run(api.store.event_feed.last_id)
    return layout(title, body, session=session, current="proposals", live={"after": last})


@page
async def proposal(request: Request, session: ConsoleSession) -> Response:
    """``GET /proposals/{proposal_id}``: one proposal, its warnings, votes, patches and timeline."""
    api = api_state(request)
    proposal_id = request.path_params["proposal_id"]
    title, body, last = await api.run(proposal_page, api.store, proposal_id, csrf=session.csrf_token)
    return layout(
        title, body, session=session, current="proposals", live={"after": last, "proposal": proposal_id}
    )


@page
async def memories(request: Request, session: ConsoleSession) -> Response:
    """``GET /memories``: memory search."""
    api = api_state(request)
    params = request.query_params
    title, body = await api.run(
        memory_search_page,
        api.store,
        q=params.get("q"),
        scope=params.get("scope"),
        kind=params.get("kind"),
        status=params.get("status"),
        cursor=params.get("cursor"),
    )
    return layout(title, body, session=session, current="memories")


@page
async def memory(request: Request, session: ConsoleSession) -> Response:
    """``GET /memories/{memory_id}``: one entry, its revisions and the forms to curate it."""
    api = api_state(request)
    memory_id = request.path_params["memory_id"]
    params = request.query_params
    title, body = await api.run(
        memory_page, api.store, memory_id, a=params.get("from"), b=params.get("to"), csrf=session.csrf_token
    )
    notice = _NOTICES.get(params.get("notice", ""))
    if notice:
        body = html('<p class="notice" role="status">$notice</p>$body', notice=notice, body=body)
    last = await api.run(api.store.event_feed.last_id)
    return layout(title, body, session=session, current="memories", live={"after": last, "memory": memory_id})


@cache
def _static(name: str) -> bytes:
    return (resources.files("capabilities.console") / "static" / name).read_bytes()


async def static(request: Request) -> Response:
    """``GET /static/{name}``: the console's stylesheet and script."""
    name = request.path_params["name"]
    if name not in _STATIC_TYPES:
        return Response("not found", status_code=404, media_type="text/plain")
    return Response(
        _static(name),
        media_type=_STATIC_TYPES[name],
        headers={"cache-control": "no-cache", "x-content-type-options": "nosniff"},
    )


async def favicon(request: Request) -> Response:
    """``GET /favicon.ico``: nothing (so browsers stop asking)."""
    return Response(status_code=204, headers={"cache-control": "max-age=86400"})


async def authorize_stream(request: Request) -> None:
    """The console's stream opens (and stays open) for a live session only."""
    try:
        await console_auth(request).session(request)
    except LoginRequired:
        raise Unauthenticated("sign in to the console first") from None


CONSOLE_ROUTES: list[BaseRoute] = [
    Route("/", proposals, methods=["GET"]),
    Route("/login", login_page, methods=["GET"]),
    Route("/login", login, methods=["POST"]),
    Route("/logout", logout, methods=["POST"]),
    Route("/proposals/{proposal_id}", proposal, methods=["GET"]),
    Route("/memories", memories, methods=["GET"]),
    Route("/memories/{memory_id}", memory, methods=["GET"]),
    Route("/memories/{memory_id}/action", memory_action, methods=["POST"]),
    Route("/memories/{memory_id}/revise", memory_revise, methods=["POST"]),
    Route("/warnings/{event_id}/feedback", warning_feedback, methods=["POST"]),
    Route("/static/{name}", static, methods=["GET"]),
    Route("/favicon.ico", favicon, methods=["GET"]),
    Route(
        "/console/events/stream", EventStreamEndpoint(authorize_stream, named_events=False), methods=["GET"]
    ),
]
"""The console's routes (at the site root, after ``/mcp`` and ``/api/v1``)."""
