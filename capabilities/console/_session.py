"""Console login, sessions and CSRF protection.

- **Login**: a form where the maintainer pastes an operator token. The token is checked against
  the database (hash lookup, revocation and expiry as for the API) and then forgotten: the browser
  gets a random session ID in an ``HttpOnly``, ``SameSite=Strict`` cookie, the database keeps
  only its SHA-256 (:mod:`store.access._console_sessions`). The token never appears in a URL, a cookie or
  a page. Capability and agent tokens cannot log in: the console is the maintainers' desk.
- **Sessions** are resolved on every request and end with logout, after 12 hours, or as soon as
  the operator token is revoked or expires.
- **CSRF**: every console form carries the session's CSRF token in a hidden field, compared in
  constant time; the login form (which has no session yet) uses a double-submit cookie. POSTs
  whose ``Origin`` names another site are refused outright.
"""

from __future__ import annotations

import hmac
import secrets
from dataclasses import dataclass
from urllib.parse import urlsplit

from starlette.requests import Request
from starlette.responses import Response

from capabilities.services import Services
from store import parse_decimal
from store.access import ConsoleSession, TokenKind, TokenRecord
from store.errors import Forbidden, InvalidArgument, Unauthenticated

__all__ = [
    "LOGIN_COOKIE",
    "SESSION_COOKIE",
    "ConsoleAuth",
    "LoginRequired",
    "safe_next",
]

SESSION_COOKIE = "rt_session"
LOGIN_COOKIE = "rt_login"
_MAX_FORM_BYTES = 256 * 1024


class LoginRequired(Exception):
    """No live session: the page answers with a redirect to the login form."""


@dataclass(frozen=True)
class ConsoleAuth:
    """Resolves sessions and checks CSRF tokens for the console."""

    services: Services

    async def session(self, request: Request) -> ConsoleSession:
        """The live session of this request, or :class:`LoginRequired`."""
        raw = request.cookies.get(SESSION_COOKIE)
        if not raw:
            raise LoginRequired
        store = self.services.store
        found = await store.db.run(store.console_sessions.resolve, raw)
        if found is None:
            raise LoginRequired
        return found

    async def form(self, request: Request) -> dict[str, str]:
        """The submitted form (bounded), after the same-origin check."""
        check_origin(request)
        declared = request.headers.get("content-length")
        size = 0 if declared is None else parse_decimal(declared.strip(" \t"))  # int() takes "١٢", "1_0"
        if size is None:
            raise InvalidArgument("Content-Length must be a decimal number")
        if size > _MAX_FORM_BYTES:
            raise Forbidden("the form is too large")
        form = await request.form(max_files=0, max_fields=50)
        return {key: value for key, value in form.items() if isinstance(value, str)}

    async def checked_form(self, request: Request) -> tuple[ConsoleSession, dict[str, str]]:
        """The session and the form of a console POST whose CSRF token matches the session's."""
        session = await self.session(request)
        form = await self.form(request)
        if not hmac.compare_digest(form.get("csrf_token", "").encode(), session.csrf_token.encode()):
            raise Forbidden("the form's CSRF token does not match this session; reload the page and retry")
        return session, form

    async def log_in(self, request: Request, form: dict[str, str]) -> tuple[str, ConsoleSession]:
        """Check the login form (double-submit CSRF, then the token); start a session."""
        cookie = request.cookies.get(LOGIN_COOKIE, "")
        if not cookie or not hmac.compare_digest(form.get("csrf_token", "").encode(), cookie.encode()):
            raise Forbidden("the login form expired; reload it and try again")
        token = form.get("token", "").strip()
        if not token:
            raise Unauthenticated("paste an operator token")
        store = self.services.store
        record = await store.db.run(store.grants.authenticate, token)
        if not isinstance(record, TokenRecord) or record.kind is not TokenKind.OPERATOR:
            # The console is the maintainers' desk (decisions, curation): agents use MCP or the API.
            raise Unauthenticated("only operator tokens open the console")
        return await store.db.run(store.console_sessions.start, record)

    async def log_out(self, request: Request) -> None:
        """End the session of this request (its CSRF token already checked)."""
        raw = request.cookies.get(SESSION_COOKIE)
        if raw:
            store = self.services.store
            await store.db.run(store.console_sessions.end, raw)


def check_origin(request: Request) -> None:
    """Refuse a POST whose ``Origin`` (when sent) is not this site."""
    origin = request.headers.get("origin")
    if origin is None or (origin == "null" and request.headers.get("sec-fetch-site") == "same-origin"):
        return
    host = request.headers.get("host", "")
    if urlsplit(origin).netloc != host:
        raise Forbidden("cross-site form submissions are refused")


def new_login_token() -> str:
    """A fresh double-submit token for the login form."""
    return secrets.token_urlsafe(24)


def set_cookie(response: Response, request: Request, name: str, value: str, *, max_age: int | None) -> None:
    """An ``HttpOnly``, ``SameSite=Strict`` cookie for the whole console (``Secure`` over HTTPS)."""
    response.set_cookie(
        name,
        value,
        max_age=max_age,
        path="/",
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )


def safe_next(target: str | None) -> str:
    """A redirect target inside the console (never another site)."""
    if not target or not target.startswith("/") or target.startswith("//") or "\\" in target:
        return "/"
    if target.startswith(("/api/", "/mcp", "/login", "/logout")):
        return "/"
    return target
