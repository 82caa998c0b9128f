"""Bearer tokens: minting, hashing, and the tokens table (operator and agent tokens).

Every bearer token Roundtable hands out, operator token, agent token or capability grant, is
``secrets.token_urlsafe(32)``. Only its SHA-256 is stored; the raw token leaves the store once,
inside :class:`IssuedToken`, whose ``repr`` hides it. An **operator token** names an operator
(``X-Actor-ID`` must equal the name on the HTTP API); an **agent token** is bound to one roster
agent (``agent_id``) and acts as that agent only, with its roster role's toolset. Both expire only
when minted with a TTL. Verification lives in :class:`store.access._grants.GrantStore.authenticate`.
"""

from __future__ import annotations

import hashlib
import re
import secrets
import sqlite3
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any, Generic, TypeVar

from store._ids import new_id
from store._rows import as_dict, fetch_row, from_row
from store.errors import InvalidArgument
from store.events import append_event

__all__ = [
    "MAX_TTL_SECONDS",
    "TOKEN_BYTES",
    "IssuedToken",
    "TokenKind",
    "TokenRecord",
    "check_operator_name",
    "check_ttl",
    "hash_token",
    "insert_token",
    "looks_like_token",
    "new_token",
    "parse_time",
    "revoke_operator_token_in",
    "stamp_time",
    "token_from_row",
]

TOKEN_BYTES = 32
MAX_TTL_SECONDS = 7 * 24 * 3600
# Whole-string shapes, checked with fullmatch: "^...$" with match would accept a trailing newline.
_TOKEN_SHAPE = re.compile(r"[A-Za-z0-9_-]{32,128}")
_NAME_SHAPE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@:-]{0,99}")
_TIME_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"

_Record = TypeVar("_Record")


@dataclass(frozen=True)
class IssuedToken(Generic[_Record]):
    """A freshly minted credential: the stored record and the raw token, shown exactly once."""

    record: _Record
    token: str = field(repr=False)


def hash_token(token: str) -> str:
    """The hex SHA-256 of a token: the only form a token is ever stored in."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def looks_like_token(value: str) -> bool:
    """Whether ``value`` has the shape of a minted token (URL-safe base64, sane length)."""
    return _TOKEN_SHAPE.fullmatch(value) is not None


def new_token() -> tuple[str, str]:
    """A fresh raw token and its hash."""
    token = secrets.token_urlsafe(TOKEN_BYTES)
    return token, hash_token(token)


def stamp_time(moment: datetime) -> str:
    """RFC 3339 UTC with microseconds: sortable as text."""
    return moment.strftime(_TIME_FORMAT)


def parse_time(stamp: str) -> datetime:
    """The inverse of :func:`stamp_time`."""
    return datetime.strptime(stamp, _TIME_FORMAT).replace(tzinfo=UTC)


def check_ttl(ttl_seconds: object, *, required: bool) -> int | None:
    """A lifetime in whole seconds, 1 to :data:`MAX_TTL_SECONDS` (``None`` when optional and absent)."""
    if ttl_seconds is None:
        if required:
            raise InvalidArgument("ttl_seconds is required")
        return None
    if isinstance(ttl_seconds, bool) or not isinstance(ttl_seconds, int):
        raise InvalidArgument("ttl_seconds must be an integer")
    if not 1 <= ttl_seconds <= MAX_TTL_SECONDS:
        raise InvalidArgument(f"ttl_seconds must lie between 1 and {MAX_TTL_SECONDS}")
    return ttl_seconds


class TokenKind(StrEnum):
    """What a token stands for."""

    OPERATOR = "operator"
    AGENT = "agent"


@dataclass(frozen=True)
class TokenRecord:
    """One operator or agent token, as stored (the token hash is not part of it)."""

    id: str
    name: str
    created_by: str
    created_at: str
    expires_at: str | None
    revoked_at: str | None
    agent_id: str | None = None
    """The roster agent an agent token acts as; ``None`` for an operator token."""

    @property
    def kind(self) -> TokenKind:
        """Operator or agent token."""
        return TokenKind.OPERATOR if self.agent_id is None else TokenKind.AGENT

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape shown to operators (never the token); ``agent_id`` only on agent tokens."""
        shape = as_dict(self)
        shape["kind"] = str(self.kind)
        if self.agent_id is None:
            del shape["agent_id"]
        return shape


def token_from_row(row: sqlite3.Row) -> TokenRecord:
    """Build a :class:`TokenRecord` from an ``operator_tokens`` row."""
    return from_row(TokenRecord, row)


def check_operator_name(name: object) -> str:
    """An operator's name: 1-100 characters of a conservative alphabet."""
    if not isinstance(name, str) or _NAME_SHAPE.fullmatch(name) is None:
        raise InvalidArgument(
            "name must be 1-100 characters: letters, digits, '.', '_', '@', ':' or '-', "
            "starting with a letter or digit"
        )
    return name


def _load_operator_token(conn: sqlite3.Connection, token_id: str) -> TokenRecord:
    return token_from_row(fetch_row(conn, "operator_tokens", "operator token", token_id))


def insert_token(
    conn: sqlite3.Connection,
    *,
    name: str,
    digest: str,
    actor: str,
    now: datetime,
    ttl: int | None,
    agent_id: str | None = None,
) -> TokenRecord:
    """Store a token hash and its ``operator_token.created`` event, in the caller's transaction.

    ``agent_id`` makes it an agent token (the caller has checked the agent is on the roster).
    """
    token_id = new_id("token")
    expires = None if ttl is None else stamp_time(now + timedelta(seconds=ttl))
    conn.execute(
        "INSERT INTO operator_tokens (id, name, token_sha256, created_by, created_at, expires_at, agent_id)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)",
        (token_id, name, digest, actor, stamp_time(now), expires, agent_id),
    )
    payload: dict[str, Any] = {"token_id": token_id, "name": name, "expires_at": expires}
    if agent_id is not None:
        payload["agent_id"] = agent_id
    append_event(conn, "operator_token.created", actor=actor, payload=payload)
    return _load_operator_token(conn, token_id)


def revoke_operator_token_in(
    conn: sqlite3.Connection, token_id: str, *, actor: str, now: datetime
) -> tuple[TokenRecord, bool]:
    """Revoke an operator token in the caller's transaction; whether this call revoked it."""
    if (current := _load_operator_token(conn, token_id)).revoked_at is not None:
        return current, False
    conn.execute(
        "UPDATE operator_tokens SET revoked_at = ?, revoked_reason = 'revoked by operator' WHERE id = ?",
        (stamp_time(now), token_id),
    )
    append_event(
        conn, "operator_token.revoked", actor=actor, payload={"token_id": token_id, "name": current.name}
    )
    return _load_operator_token(conn, token_id), True
