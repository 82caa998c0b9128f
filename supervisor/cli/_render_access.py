"""The readable text of the access commands' answers: tokens, capabilities, ``serve``.

A token or a capability token is printed once, alone on its line, so that it can be copied.
"""

from __future__ import annotations

from typing import Any

from supervisor.cli._output import clean
from supervisor.cli._table import table

__all__ = [
    "render_grant",
    "render_grant_list",
    "render_grant_revoked",
    "render_stopped",
    "render_token",
    "render_token_list",
    "render_token_revoked",
]


def render_token(body: dict[str, Any]) -> str:
    """``token create``: the token, once, on a line of its own, and how to use it."""
    agent = f", acts as {clean(body['agent_id'])}" if body.get("agent_id") else ""
    expires = body.get("expires_at") or "never"
    return "\n".join(
        [
            f"token {body['id']} {clean(repr(body['name']))} ({body.get('kind')}{agent}; expires {expires})",
            str(body["token"]),
            "store it now: it is shown once and kept only as a hash.",
            f"use it as `Authorization: Bearer <token>` (API mutations: `X-Actor-ID: {clean(body['name'])}`)"
            " or paste it on the console's sign-in page",
        ]
    )


def render_token_list(body: dict[str, Any]) -> str:
    """``token list``: one row per token (never the token itself)."""
    rows = [
        (
            t["id"],
            t["name"],
            t.get("kind"),
            t.get("agent_id") or "-",
            t.get("expires_at") or "never",
            "revoked" if t.get("revoked_at") else "active",
        )
        for t in body["tokens"]
    ]
    headers = ("id", "name", "kind", "agent", "expires", "state")
    return table(headers, rows, empty="(no tokens; mint one with `roundtable token create --name NAME`)")


def render_token_revoked(body: dict[str, Any]) -> str:
    """``token revoke``."""
    token = body["token"]
    done = "revoked" if body.get("revoked") else f"was already revoked ({token.get('revoked_at')})"
    return f"token {token['id']} {clean(repr(token['name']))} {done}"


def render_grant(body: dict[str, Any]) -> str:
    """``capability grant``: the grant, its token once, its tools and scopes."""
    return "\n".join(
        [
            f"capability {body['grant_id']} for {body.get('role')} ({clean(body.get('agent_id'))}) on"
            f" {body.get('proposal_id')}, until {body['expires_at']}",
            str(body["token"]),
            f"  tools: {', '.join(body['tools'])}",
            f"  scopes: {', '.join(body['scopes'])}",
        ]
    )


def render_grant_revoked(body: dict[str, Any]) -> str:
    """``capability revoke``."""
    grant = body["grant"]
    done = "revoked" if body.get("revoked") else f"was already revoked ({grant.get('revoked_at')})"
    return f"capability {grant['id']} {done}"


def render_grant_list(body: dict[str, Any]) -> str:
    """``capability list``: one row per grant."""
    rows = [
        (
            g["id"],
            g.get("role"),
            g.get("proposal_id"),
            g.get("expires_at"),
            "revoked" if g.get("revoked_at") else "-",
        )
        for g in body["grants"]
    ]
    return table(("id", "role", "proposal", "expires", "revoked"), rows, empty="(no capability grants)")


def render_stopped(body: dict[str, Any]) -> str:
    """``serve``, once stopped."""
    return f"stopped serving {body.get('uds') or body.get('url')}"
