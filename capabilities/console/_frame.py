"""The frame around every console page: the layout, the security headers, the error page, and
:func:`page`, which resolves the session before a handler runs and turns what it raises into a page.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import quote

import structlog
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from capabilities.console._html import Markup, html, page_template
from capabilities.console._session import ConsoleAuth, LoginRequired
from capabilities.http_api import api_state
from store.access import ConsoleSession
from store.errors import InternalError, RoundtableError
from store.events import acting_credential

__all__ = ["SECURITY_HEADERS", "console_auth", "layout", "page"]

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

Page = Callable[[Request], Awaitable[Response]]
SessionPage = Callable[[Request, ConsoleSession], Awaitable[Response]]


def console_auth(request: Request) -> ConsoleAuth:
    """Sessions and CSRF checks over the services of the app serving ``request``."""
    return ConsoleAuth(api_state(request).services)


def layout(
    title: str,
    body: Markup,
    *,
    session: ConsoleSession | None,
    current: str = "",
    live: dict[str, Any] | None = None,
    status: int = 200,
) -> Response:
    """A whole page: ``body`` inside the site's layout, with the account form when signed in."""
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
    return layout("Error", body, session=session, status=exc.http_status)


def page(handler: SessionPage) -> Page:
    """A page for signed-in maintainers: without a session, a redirect to the login form; an
    error becomes the error page (an unexpected one is logged and answered without a traceback)."""

    @functools.wraps(handler)
    async def wrapped(request: Request) -> Response:
        session = None
        try:
            session = await console_auth(request).session(request)
            # Every event and audit row the page writes names the operator token it signed in with.
            with acting_credential(session.token_id):
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
