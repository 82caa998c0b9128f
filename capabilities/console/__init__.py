"""The maintainers' web console: server-rendered HTML at ``/``, no front-end build step.

Pages: the proposals with status and consensus; a proposal with its oracle warnings (each cited
memory entry a link), votes and whether each counts, patch versions as coloured diffs, and the
timeline; memory search; a memory entry with its revisions, a diff between two chosen revisions,
aliases, provenance, and forms to curate it. A small script follows the live event stream
(``/console/events/stream``, authenticated by the session cookie) and lists new activity.

The console is outside the bearer-guarded prefixes; it has its own login (see
:mod:`capabilities.console._session`). Every page sends a strict Content-Security-Policy (scripts
and styles from this site only, no inline code), and forbids framing.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import cache
from importlib import resources
from typing import Any
from urllib.parse import quote

import structlog
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from capabilities.console._html import Markup, html, page_template
from capabilities.console._pages import memory_page, memory_search_page, proposal_page, proposals_page
from capabilities.console._session import (
    LOGIN_COOKIE,
    SESSION_COOKIE,
    ConsoleAuth,
    LoginRequired,
    new_login_token,
    safe_next,
    set_cookie,
)
from capabilities.http_api import EventBroadcaster, EventStreamEndpoint
from capabilities.services import Services
from store.access import DEFAULT_SESSION_SECONDS, ConsoleSession
from store.errors import InternalError, RoundtableError, Unauthenticated

__all__ = ["console_routes"]

_log = structlog.get_logger("roundtable.console")

SECURITY_HEADERS = {
    "content-security-policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; "
        "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
    "referrer-policy": "same-origin",
    "cache-control": "no-store",
}
_NOTICES = {
    "pin": "Pinned.",
    "unpin": "Unpinned.",
    "archive": "Archived.",
    "restore": "Restored.",
    "resynthesize": "Resynthesis requested.",
    "revised": "Revision saved.",
}
_STATIC_TYPES = {"console.css": "text/css; charset=utf-8", "console.js": "text/javascript; charset=utf-8"}

Page = Callable[[Request], Awaitable[Response]]


@cache
def _static(name: str) -> bytes:
    return (resources.files("capabilities.console") / "static" / name).read_bytes()


def _layout(
    title: str,
    body: Markup,
    *,
    session: ConsoleSession | None,
    current: str = "",
    live: dict[str, Any] | None = None,
    status: int = 200,
) -> Response:
    account = Markup("")
    if session is not None:
        account = html(
            '<form class="account" method="post" action="/logout"><span>Signed in as $name</span>'
            '<input type="hidden" name="csrf_token" value="$csrf">'
            '<button type="submit">Log out</button></form>',
            name=session.name,
            csrf=session.csrf_token,
        )
    live_attrs = Markup("")
    if live is not None:
        live_attrs = Markup(
            " data-live"
            + "".join(
                html(' data-$k="$v"', k=key, v=value) for key, value in live.items() if value is not None
            )
        )
    page = html(
        page_template("layout.html"),
        title=title,
        account=account,
        body=body,
        live=live_attrs,
        current_proposals=Markup(' aria-current="page"') if current == "proposals" else Markup(""),
        current_memories=Markup(' aria-current="page"') if current == "memories" else Markup(""),
    )
    return HTMLResponse(page, status_code=status, headers=SECURITY_HEADERS)


def _error_page(exc: RoundtableError, session: ConsoleSession | None) -> Response:
    body = html(
        '<h1>Something is wrong</h1><p role="alert">$message</p><p class="id">Error code: $code</p>'
        '<p><a href="/">Back to the proposals</a></p>',
        message=exc.message,
        code=exc.code,
    )
    return _layout("Error", body, session=session, status=exc.http_status)


def console_routes(
    services: Services, broadcaster: EventBroadcaster, *, changed: Callable[[], None]
) -> list[BaseRoute]:
    """The console's routes (at the site root, after ``/mcp`` and ``/api/v1``)."""
    store = services.store
    auth = ConsoleAuth(services)
    run = store.db.run

    def page(handler: Callable[[Request, ConsoleSession], Awaitable[Response]]) -> Page:
        async def wrapped(request: Request) -> Response:
            session = None
            try:
                session = await auth.session(request)
                return await handler(request, session)
            except LoginRequired:
                target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
                return RedirectResponse(f"/login?next={quote(target, safe='')}", status_code=303)
            except RoundtableError as exc:
                return _error_page(exc, session)
            except Exception:  # the boundary: log, answer without a traceback
                _log.exception("console.unexpected_error", path=request.url.path)
                return _error_page(InternalError("the page failed unexpectedly; see the server log"), session)

        return wrapped

    async def proposals(request: Request, session: ConsoleSession) -> Response:
        cursor = request.query_params.get("cursor")
        title, body = await run(proposals_page, store, cursor=cursor)
        last = await run(store.event_feed.last_id)
        return _layout(title, body, session=session, current="proposals", live={"after": last})

    async def proposal(request: Request, session: ConsoleSession) -> Response:
        proposal_id = request.path_params["proposal_id"]
        title, body, last = await run(proposal_page, store, proposal_id)
        return _layout(
            title, body, session=session, current="proposals", live={"after": last, "proposal": proposal_id}
        )

    async def memories(request: Request, session: ConsoleSession) -> Response:
        params = request.query_params
        title, body = await run(
            memory_search_page,
            store,
            q=params.get("q"),
            scope=params.get("scope"),
            kind=params.get("kind"),
            status=params.get("status"),
            cursor=params.get("cursor"),
        )
        return _layout(title, body, session=session, current="memories")

    async def memory(request: Request, session: ConsoleSession) -> Response:
        memory_id = request.path_params["memory_id"]
        params = request.query_params
        title, body = await run(
            memory_page, store, memory_id, a=params.get("from"), b=params.get("to"), csrf=session.csrf_token
        )
        notice = _NOTICES.get(params.get("notice", ""))
        if notice:
            body = html('<p class="notice" role="status">$notice</p>$body', notice=notice, body=body)
        last = await run(store.event_feed.last_id)
        return _layout(
            title, body, session=session, current="memories", live={"after": last, "memory": memory_id}
        )

    async def memory_action(request: Request, session: ConsoleSession) -> Response:
        memory_id = request.path_params["memory_id"]
        _, form = await auth.checked_form(request)
        action = form.get("action", "")
        if action == "resynthesize":
            await run(store.memory_admin.request_resynthesis, memory_id, actor=session.name, reason="console")
        else:
            await run(store.memory_admin.act, memory_id, action, actor=session.name)
        changed()
        return RedirectResponse(f"/memories/{quote(memory_id)}?notice={quote(action)}", status_code=303)

    async def memory_revise(request: Request, session: ConsoleSession) -> Response:
        memory_id = request.path_params["memory_id"]
        _, form = await auth.checked_form(request)
        expected = form.get("expected_revision", "")
        fields = {
            # Browsers submit textarea line breaks as CRLF.
            "body_md": form.get("body_md", "").replace("\r\n", "\n"),
            "title": form.get("title", ""),
            "reason": form.get("reason", ""),
            "expected_revision": int(expected) if expected.isdigit() else 0,
        }
        await run(store.memory_admin.revise, memory_id, fields, actor=session.name)
        changed()
        return RedirectResponse(f"/memories/{quote(memory_id)}?notice=revised", status_code=303)

    async def logout(request: Request, session: ConsoleSession) -> Response:
        await auth.checked_form(request)
        await auth.log_out(request)
        response = RedirectResponse("/login", status_code=303)
        response.delete_cookie(SESSION_COOKIE, path="/", httponly=True, samesite="strict")
        return response

    async def login_form(request: Request, *, message: str | None = None, status: int = 200) -> Response:
        token = new_login_token()
        body = html(
            "<h1>Sign in</h1><p>Paste an operator token (<code>roundtable token create --name NAME</code>)."
            " It is checked and then forgotten: the console keeps a session, never the token.</p>$error"
            '<form class="login" method="post" action="/login">'
            '<input type="hidden" name="csrf_token" value="$csrf">'
            '<input type="hidden" name="next" value="$next">'
            '<label for="token">Operator token</label>'
            '<input id="token" name="token" type="password" autocomplete="off" required>'
            '<button type="submit">Sign in</button></form>',
            error=html('<p class="error" role="alert">$m</p>', m=message) if message else Markup(""),
            csrf=token,
            next=safe_next(request.query_params.get("next")),
        )
        response = _layout("Sign in", body, session=None, status=status)
        set_cookie(response, request, LOGIN_COOKIE, token, max_age=3600)
        return response

    async def login_page(request: Request) -> Response:
        return await login_form(request)

    async def login(request: Request) -> Response:
        try:
            form = await auth.form(request)
            raw, _ = await auth.log_in(request, form)
        except RoundtableError as exc:
            return await login_form(request, message=exc.message, status=exc.http_status)
        response = RedirectResponse(safe_next(form.get("next")), status_code=303)
        set_cookie(response, request, SESSION_COOKIE, raw, max_age=DEFAULT_SESSION_SECONDS)
        response.delete_cookie(LOGIN_COOKIE, path="/", httponly=True, samesite="strict")
        return response

    async def static(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in _STATIC_TYPES:
            return Response("not found", status_code=404, media_type="text/plain")
        return Response(
            _static(name),
            media_type=_STATIC_TYPES[name],
            headers={"cache-control": "no-cache", "x-content-type-options": "nosniff"},
        )

    async def favicon(request: Request) -> Response:
        return Response(status_code=204, headers={"cache-control": "max-age=86400"})

    async def authorize_stream(request: Request) -> None:
        try:
            await auth.session(request)
        except LoginRequired:
            raise Unauthenticated("sign in to the console first") from None

    stream = EventStreamEndpoint(broadcaster, authorize_stream, named_events=False)
    return [
        Route("/", page(proposals), methods=["GET"]),
        Route("/login", login_page, methods=["GET"]),
        Route("/login", login, methods=["POST"]),
        Route("/logout", page(logout), methods=["POST"]),
        Route("/proposals/{proposal_id}", page(proposal), methods=["GET"]),
        Route("/memories", page(memories), methods=["GET"]),
        Route("/memories/{memory_id}", page(memory), methods=["GET"]),
        Route("/memories/{memory_id}/action", page(memory_action), methods=["POST"]),
        Route("/memories/{memory_id}/revise", page(memory_revise), methods=["POST"]),
        Route("/static/{name}", static, methods=["GET"]),
        Route("/favicon.ico", favicon, methods=["GET"]),
        Route("/console/events/stream", stream, methods=["GET"]),
    ]
