"""The console's forms: signing in and out, curating a memory entry, judging an oracle warning.

Every POST is checked by :class:`~capabilities.console._session.ConsoleAuth` (same origin, a
bounded form, the CSRF token) before it reaches the store, and answers with a redirect (303).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from capabilities.console._frame import console_auth, layout, page
from capabilities.console._html import Markup, html, join
from capabilities.console._session import (
    LOGIN_COOKIE,
    SESSION_COOKIE,
    new_login_token,
    safe_next,
    set_cookie,
)
from capabilities.console._widgets import badge
from capabilities.http_api import ApiState, api_state
from store import MAX_REASON_CHARS, OracleFeedback, Store, Verdict, parse_decimal
from store.access import DEFAULT_SESSION_SECONDS, ConsoleSession
from store.errors import InvalidArgument, RoundtableError, Unauthenticated

__all__ = [
    "feedback_widget",
    "login",
    "login_page",
    "logout",
    "memory_action",
    "memory_revise",
    "warning_feedback",
    "warning_feedback_forms",
]


async def _curation(request: Request) -> tuple[ApiState, str, dict[str, str]]:
    """The state, the entry's ID and the checked form of a curation POST."""
    _, form = await console_auth(request).checked_form(request)
    return api_state(request), request.path_params["memory_id"], form


def _curated(api: ApiState, memory_id: str, notice: str) -> Response:
    """Say that something was committed; back to the entry, with a notice."""
    api.changed()
    return RedirectResponse(f"/memories/{quote(memory_id)}?notice={quote(notice)}", status_code=303)


@page
async def memory_action(request: Request, session: ConsoleSession) -> Response:
    """``POST /memories/{memory_id}/action``: pin, unpin, archive, restore or resynthesise."""
    api, memory_id, form = await _curation(request)
    admin = api.store.memory_admin
    action = form.get("action", "")
    if action == "resynthesize":
        await api.run(admin.request_resynthesis, memory_id, actor=session.name, reason="console")
    else:
        await api.run(admin.act, memory_id, action, actor=session.name)
    return _curated(api, memory_id, action)


@page
async def memory_revise(request: Request, session: ConsoleSession) -> Response:
    """``POST /memories/{memory_id}/revise``: save a new revision of the entry."""
    api, memory_id, form = await _curation(request)
    expected = form.get("expected_revision", "")
    fields = {
        # Browsers submit textarea line breaks as CRLF.
        "body_md": form.get("body_md", "").replace("\r\n", "\n"),
        "title": form.get("title", ""),
        "reason": form.get("reason", ""),
        "expected_revision": parse_decimal(expected) or 0,
    }
    await api.run(api.store.memory_admin.revise, memory_id, fields, actor=session.name)
    return _curated(api, memory_id, "revised")


@page
async def logout(request: Request, session: ConsoleSession) -> Response:
    """``POST /logout``: end the session."""
    auth = console_auth(request)
    await auth.checked_form(request)
    await auth.log_out(request)
    response = RedirectResponse("/login", status_code=303)
    response.delete_cookie(SESSION_COOKIE, path="/", httponly=True, samesite="strict")
    return response


def _login_form(request: Request, *, message: str | None = None, status: int = 200) -> Response:
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
    response = layout("Sign in", body, session=None, status=status)
    set_cookie(response, request, LOGIN_COOKIE, token, max_age=3600)
    return response


_MINT = "roundtable token create --name NAME"


def _login_advice(exc: RoundtableError) -> str:
    """What a refused sign-in should do next: the bare ``authenticate`` message speaks of bearer
    headers, which a person pasting into a form never wrote."""
    if not isinstance(exc, Unauthenticated):
        return exc.message
    if "malformed" in exc.message:
        return (
            "That is not a Roundtable token. Paste the whole token that"
            f" `{_MINT}` printed (one line of letters, digits, - and _), run in this project."
        )
    if "not known" in exc.message:
        return (
            "This project has no such token (was it minted in another project, or mistyped?)."
            f" Mint one here with `{_MINT}` and paste what it prints."
        )
    if "only operator" in exc.message:
        return (
            "Agent tokens work on MCP and the API: only operator tokens open the console."
            f" Mint one with `{_MINT}` (no --agent) and paste it."
        )
    return f"{exc.message}. Mint a new token with `{_MINT}` and paste it."


async def login_page(request: Request) -> Response:
    """``GET /login``: the sign-in form, with a fresh double-submit token."""
    return _login_form(request)


async def login(request: Request) -> Response:
    """``POST /login``: check the operator token, start a session, go where the form says."""
    auth = console_auth(request)
    try:
        form = await auth.form(request)
        raw, _ = await auth.log_in(request, form)
    except RoundtableError as exc:
        return _login_form(request, message=_login_advice(exc), status=exc.http_status)
    response = RedirectResponse(safe_next(form.get("next")), status_code=303)
    set_cookie(response, request, SESSION_COOKIE, raw, max_age=DEFAULT_SESSION_SECONDS)
    response.delete_cookie(LOGIN_COOKIE, path="/", httponly=True, samesite="strict")
    return response


# -- feedback on oracle warnings -----------------------------------------------------------------

_VERDICT_LABELS = {Verdict.CONFIRMED: "Confirm", Verdict.DISMISSED: "Dismiss"}
_VERDICT_TONES: dict[str, str] = {Verdict.CONFIRMED: "good", Verdict.DISMISSED: "muted"}


def warning_feedback_forms(event_id: int, verdict: str | None, csrf: str) -> Markup:
    """Under a warning: its current verdict and a Confirm and a Dismiss form (each with a reason)."""
    forms = join(
        html(
            '<form class="feedback" method="post" action="$action">'
            '<input type="hidden" name="csrf_token" value="$csrf">'
            '<input type="hidden" name="verdict" value="$verdict">'
            '<input name="reason" maxlength="$max" placeholder="reason (optional)"'
            ' aria-label="$label reason">'
            '<button type="submit">$label</button></form>',
            action=f"/warnings/{event_id}/feedback",
            csrf=csrf,
            verdict=str(choice),
            max=MAX_REASON_CHARS,
            label=label,
        )
        for choice, label in _VERDICT_LABELS.items()
    )
    return html(
        '<div class="warning-feedback" id="feedback-$id">'
        '<p class="verdict">Verdict: $verdict</p>$forms</div>',
        id=event_id,
        verdict=badge(verdict or "unreviewed", tone=_VERDICT_TONES.get(verdict or "", "neutral")),
        forms=forms,
    )


def feedback_widget(store: Store, proposal_id: str, csrf: str) -> Callable[[dict[str, Any]], Markup]:
    """The feedback forms of each warning of a proposal (its verdicts read once, blocking)."""
    verdicts = OracleFeedback(store.db).verdicts(proposal_id)
    return lambda event: warning_feedback_forms(int(event["id"]), verdicts.get(int(event["id"])), csrf)


@page
async def warning_feedback(request: Request, session: ConsoleSession) -> Response:
    """``POST /warnings/{event_id}/feedback``: confirm or dismiss a warning; back to its proposal."""
    _, form = await console_auth(request).checked_form(request)
    api = api_state(request)
    event_id = parse_decimal(request.path_params["event_id"])
    if event_id is None:
        raise InvalidArgument("the warning's event ID must be a positive integer")
    feedback = OracleFeedback(api.store.db)
    committed = await api.run(
        feedback.give,
        event_id,
        form.get("verdict", ""),
        actor=session.name,
        reason=form.get("reason", "").strip() or None,
        audit=True,
    )
    api.changed()
    event = committed.body["event"]
    target = f"/proposals/{quote(str(event['proposal_id']))}#feedback-{event_id}"
    return RedirectResponse(target, status_code=303)
