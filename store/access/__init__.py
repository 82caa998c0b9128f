"""Who may act: operator and agent tokens, capability grants, console sessions.

Only hashes of bearer tokens are stored (:mod:`store.access._tokens`); a grant binds a role launch
to one proposal, its task and scopes (:mod:`store.access._grants`).
"""

from __future__ import annotations

from store.access._console_sessions import DEFAULT_SESSION_SECONDS, ConsoleSession, ConsoleSessions
from store.access._grants import (
    DEFAULT_GRANT_TTL_SECONDS,
    MAX_TTL_SECONDS,
    PROJECT_SCOPE,
    GrantRecord,
    GrantStore,
    IssuedToken,
    TokenKind,
    TokenRecord,
    require_live_grant,
    revoke_for_launch_in,
    revoke_for_proposal_in,
)

__all__ = [
    "DEFAULT_GRANT_TTL_SECONDS",
    "DEFAULT_SESSION_SECONDS",
    "MAX_TTL_SECONDS",
    "PROJECT_SCOPE",
    "ConsoleSession",
    "ConsoleSessions",
    "GrantRecord",
    "GrantStore",
    "IssuedToken",
    "TokenKind",
    "TokenRecord",
    "require_live_grant",
    "revoke_for_launch_in",
    "revoke_for_proposal_in",
]
