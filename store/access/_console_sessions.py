"""Web console sessions: a random session ID in an HttpOnly cookie, its SHA-256 in the database.

A maintainer logs in by pasting an operator token; the console checks it, then starts a session
bound to that token's ID and name. The token itself is never stored, put in a cookie or in a URL.
Every request resolves the session afresh and checks that the session is neither ended nor
expired *and* that its operator token is still live, so revoking the token ends its sessions.
Each session carries its own CSRF token for the console's forms.
"""

from __future__ import annotations

import hashlib
import secrets
import sqlite3
from dataclasses import dataclass
from datetime import datetime, timedelta

from store._ids import utc_now
from store.access._grants import TokenKind, TokenRecord
from store.db import Database
from store.errors import Unauthenticated
from store.events import append_audit

__all__ = ["DEFAULT_SESSION_SECONDS", "ConsoleSession", "ConsoleSessions"]

DEFAULT_SESSION_SECONDS = 12 * 3600
_TIME_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"


def _stamp(moment: datetime) -> str:
    return moment.strftime(_TIME_FORMAT)


def _hash(session_id: str) -> str:
    return hashlib.sha256(session_id.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class ConsoleSession:
    """A live console session (the raw session ID is known only to the cookie)."""

    token_id: str
    name: str
    csrf_token: str
    expires_at: str


class ConsoleSessions:
    """Starts, resolves and ends console sessions; blocking (call through ``Database.run``)."""

    def __init__(self, db: Database):
        self.db = db

    def start(
        self, record: TokenRecord, *, ttl_seconds: int = DEFAULT_SESSION_SECONDS
    ) -> tuple[str, ConsoleSession]:
        """A new session for a verified operator token: ``(raw session ID, session)``."""
        if record.kind is not TokenKind.OPERATOR:
            raise Unauthenticated("only operator tokens open the console")
        session_id = secrets.token_urlsafe(32)
        csrf = secrets.token_urlsafe(32)
        now = utc_now()
        expires = now + timedelta(seconds=ttl_seconds)
        if record.expires_at is not None:
            expires = min(
                expires, datetime.strptime(record.expires_at, _TIME_FORMAT).replace(tzinfo=now.tzinfo)
            )

        def write(conn: sqlite3.Connection) -> None:
            conn.execute(
                "INSERT INTO console_sessions (id_sha256, token_id, name, csrf_token, created_at, expires_at)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (_hash(session_id), record.id, record.name, csrf, _stamp(now), _stamp(expires)),
            )
            append_audit(
                conn,
                "console.login",
                actor=record.name,
                target_type="operator_token",
                target_id=record.id,
                event=None,
            )

        self.db.write(write)
        return session_id, ConsoleSession(record.id, record.name, csrf, _stamp(expires))

    def resolve(self, session_id: str) -> ConsoleSession | None:
        """The live session behind a cookie value, or ``None``."""
        if not session_id or len(session_id) > 200:
            return None
        row = self.db.read(
            lambda conn: conn.execute(
                "SELECT s.token_id, s.name, s.csrf_token, s.expires_at, s.ended_at,"
                " t.revoked_at AS token_revoked_at, t.expires_at AS token_expires_at"
                " FROM console_sessions AS s JOIN operator_tokens AS t ON t.id = s.token_id"
                " WHERE s.id_sha256 = ?",
                (_hash(session_id),),
            ).fetchone()
        )
        if row is None or row["ended_at"] is not None or row["token_revoked_at"] is not None:
            return None
        now = _stamp(utc_now())
        # The stamps share one fixed-width format, so they compare as strings.
        if row["expires_at"] <= now or (
            row["token_expires_at"] is not None and row["token_expires_at"] <= now
        ):
            return None
        return ConsoleSession(row["token_id"], row["name"], row["csrf_token"], row["expires_at"])

    def end(self, session_id: str) -> bool:
        """End a session (logout); whether it was live."""

        def write(conn: sqlite3.Connection) -> bool:
            row = conn.execute(
                "SELECT token_id, name FROM console_sessions WHERE id_sha256 = ? AND ended_at IS NULL",
                (_hash(session_id),),
            ).fetchone()
            if row is None:
                return False
            conn.execute(
                "UPDATE console_sessions SET ended_at = ? WHERE id_sha256 = ?",
                (_stamp(utc_now()), _hash(session_id)),
            )
            append_audit(
                conn,
                "console.logout",
                actor=row["name"],
                target_type="operator_token",
                target_id=row["token_id"],
                event=None,
            )
            return True

        return self.db.write(write)
