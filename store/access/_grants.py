"""Capability grants: minting, verification and revocation (and of operator and agent tokens).

A **grant** binds a role launch to one proposal ``P``: its task ``T`` (read from the proposal row
inside the minting transaction), the allowed scopes ``{T, "project"}``, the allowed tools and an
expiry. Grants and operator tokens (:mod:`store.access._tokens`) are bearer tokens of which only
``sha256(token)`` is stored. :meth:`GrantStore.authenticate` looks the hash up (an indexed
equality, so the lookup leaks nothing useful about near misses) and confirms it with
:func:`hmac.compare_digest`. Expired or revoked credentials raise :class:`Unauthenticated`.

The raw token is returned once, inside :class:`~store.access._tokens.IssuedToken` whose ``repr`` hides it,
and never reaches the database, an event, a log line or an error message. ``capability.granted``
and ``capability.revoked`` events are written in the transaction of the change they describe.

The record type and the connection-level helpers (``require_live_grant``, ``revoke_in``,
``revoke_for_proposal_in``, ``revoke_for_launch_in``) that let other stores check and revoke grants
inside their own write transaction live in :mod:`store.access._grant_rows`; they are importable from here
too.
"""

from __future__ import annotations

import hmac
import json
import sqlite3
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta

from store._ids import new_id, utc_now
from store._text import is_label
from store.access._grant_rows import (
    GrantRecord,
    grant_from_row,
    load_grant,
    require_live_grant,
    revoke_for_launch_in,
    revoke_for_proposal_in,
    revoke_in,
)
from store.access._tokens import (
    MAX_TTL_SECONDS,
    IssuedToken,
    TokenKind,
    TokenRecord,
    check_operator_name,
    check_ttl,
    hash_token,
    insert_token,
    looks_like_token,
    new_token,
    parse_time,
    revoke_operator_token_in,
    stamp_time,
    token_from_row,
)
from store.db import Database
from store.errors import Conflict, InvalidArgument, NotFound, Unauthenticated
from store.events import append_event

__all__ = [
    "DEFAULT_GRANT_TTL_SECONDS",
    "MAX_TTL_SECONDS",
    "PROJECT_SCOPE",
    "GrantRecord",
    "GrantStore",
    "IssuedToken",
    "TokenKind",
    "TokenRecord",
    "hash_token",
    "looks_like_token",
    "require_live_grant",
    "revoke_for_launch_in",
    "revoke_for_proposal_in",
    "revoke_in",
]

PROJECT_SCOPE = "project"
DEFAULT_GRANT_TTL_SECONDS = 900


def _check_label(name: str, value: object) -> str:
    if not isinstance(value, str) or not is_label(value):  # the whole string: "P-1\n" is no label
        raise InvalidArgument(f"{name} must be a nonblank identifier (letters, digits, '.', '_', ':', '-')")
    return value


def _check_tools(tools: object) -> list[str]:
    if not isinstance(tools, frozenset | set | list | tuple) or not tools:
        raise InvalidArgument("a grant needs a nonempty set of tools")
    names = sorted({str(tool) for tool in tools})
    for name in names:
        _check_label("tool", name)
    return names


def _proposal_task(conn: sqlite3.Connection, proposal_id: str) -> str:
    """The task of proposal ``proposal_id``, refusing unknown or closed proposals."""
    # The proposals table comes before capability_grants in the migrations, so no OperationalError
    # here means "no such proposal": every one propagates, to be translated at the database boundary.
    row = conn.execute("SELECT task_id, status FROM proposals WHERE id = ?", (proposal_id,)).fetchone()
    if row is None:
        raise NotFound(f"proposal {proposal_id} does not exist")
    from store.work import ProposalStatus  # late: store.work imports store.access

    if row["status"] in ProposalStatus.CLOSED_TO_LAUNCHES:
        raise Conflict(f"proposal {proposal_id} is {row['status']}; no capability is granted for it")
    return str(row["task_id"])


class GrantStore:
    """Mints, verifies and revokes grants and operator tokens; every method is blocking."""

    def __init__(
        self,
        db: Database,
        *,
        clock: Callable[[], datetime] = utc_now,
        roster: Mapping[str, str] | None = None,
    ):
        self.db = db
        # The project's [agents] table (agent ID to roster role): agent tokens name one of them.
        self.roster: Mapping[str, str] = roster if roster is not None else {}
        # Replaceable so tests can move time forward instead of sleeping past an expiry.
        self.clock = clock

    # -- capability grants ---------------------------------------------------------------------

    def mint_grant(
        self,
        *,
        proposal_id: str,
        role: str,
        agent_id: str,
        tools: frozenset[str],
        ttl_seconds: int,
        actor: str,
        launch_id: str | None = None,
    ) -> IssuedToken[GrantRecord]:
        """Mint a capability for ``role`` bound to ``proposal_id``; the token is in the answer only.

        The task and the scopes ``{task, "project"}`` come from the proposal row, read in the
        same transaction that stores the grant and its ``capability.granted`` event.
        """
        proposal_v = _check_label("proposal_id", proposal_id)
        role_v = _check_label("role", role)
        agent_v = _check_label("agent_id", agent_id)
        launch_v = None if launch_id is None else _check_label("launch_id", launch_id)
        tool_names = _check_tools(tools)
        ttl = check_ttl(ttl_seconds, required=True)
        assert ttl is not None
        token, digest = new_token()

        def write(conn: sqlite3.Connection) -> GrantRecord:
            task_id = _proposal_task(conn, proposal_v)
            now = self.clock()
            grant_id = new_id("grant")
            scopes = sorted({task_id, PROJECT_SCOPE})
            conn.execute(
                "INSERT INTO capability_grants (id, role, agent_id, proposal_id, task_id, scopes, tools,"
                " launch_id, token_sha256, created_by, created_at, expires_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    grant_id,
                    role_v,
                    agent_v,
                    proposal_v,
                    task_id,
                    json.dumps(scopes),
                    json.dumps(tool_names),
                    launch_v,
                    digest,
                    actor,
                    stamp_time(now),
                    stamp_time(now + timedelta(seconds=ttl)),
                ),
            )
            grant = load_grant(conn, grant_id)
            append_event(
                conn,
                "capability.granted",
                actor=actor,
                task_id=task_id,
                proposal_id=proposal_v,
                payload={
                    "grant_id": grant_id,
                    "role": role_v,
                    "agent_id": agent_v,
                    "scopes": scopes,
                    "tools": tool_names,
                    "launch_id": launch_v,
                    "expires_at": grant.expires_at,
                },
            )
            return grant

        return IssuedToken(self.db.write(write), token)

    def get_grant(self, grant_id: str) -> GrantRecord:
        """One grant by ID, or :class:`NotFound`."""
        return self.db.read(lambda conn: load_grant(conn, grant_id))

    def list_grants(self, *, proposal_id: str | None = None, active_only: bool = False) -> list[GrantRecord]:
        """Grants, newest first, optionally of one proposal and only live ones."""
        clauses, params = ["1 = 1"], []  # portable: PostgreSQL wants a boolean
        if proposal_id is not None:
            clauses.append("proposal_id = ?")
            params.append(proposal_id)
        if active_only:
            clauses.append("revoked_at IS NULL AND expires_at > ?")
            params.append(stamp_time(self.clock()))
        sql = (
            f"SELECT * FROM capability_grants WHERE {' AND '.join(clauses)} ORDER BY created_at DESC, id DESC"
        )
        rows = self.db.read(lambda conn: conn.execute(sql, params).fetchall())
        return [grant_from_row(row) for row in rows]

    def bind_launch(self, grant_id: str, launch_id: str, *, actor: str) -> GrantRecord:
        """Record the launch a grant was minted for, once (the grant may be minted first)."""
        launch_v = _check_label("launch_id", launch_id)

        def write(conn: sqlite3.Connection) -> GrantRecord:
            bound = load_grant(conn, grant_id).launch_id
            if bound not in (None, launch_v):
                raise Conflict(f"capability grant {grant_id} already belongs to launch {bound}")
            conn.execute("UPDATE capability_grants SET launch_id = ? WHERE id = ?", (launch_v, grant_id))
            return load_grant(conn, grant_id)

        return self.db.write(write)

    def revoke(
        self, grant_id: str, *, actor: str, reason: str = "revoked by operator"
    ) -> tuple[GrantRecord, bool]:
        """Revoke a grant; returns it and whether this call revoked it (idempotent)."""
        grant_v = _check_label("grant_id", grant_id)
        return self.db.write(lambda conn: revoke_in(conn, grant_v, actor=actor, reason=reason))

    def revoke_for_proposal(self, proposal_id: str, *, actor: str, reason: str) -> list[GrantRecord]:
        """Revoke every live grant on a proposal, in one transaction."""
        return self.db.write(
            lambda conn: revoke_for_proposal_in(conn, proposal_id, actor=actor, reason=reason)
        )

    def revoke_for_launch(self, launch_id: str, *, actor: str, reason: str) -> list[GrantRecord]:
        """Revoke every live grant of a launch, in one transaction."""
        return self.db.write(lambda conn: revoke_for_launch_in(conn, launch_id, actor=actor, reason=reason))

    # -- operator tokens -----------------------------------------------------------------------

    def mint_token(
        self, *, name: str, actor: str, ttl_seconds: int | None = None, agent_id: str | None = None
    ) -> IssuedToken[TokenRecord]:
        """Mint a token called ``name``; the token is in the answer only.

        Without ``agent_id`` it is an operator token; with it, an agent token bound to that roster
        agent (:class:`InvalidArgument` for an agent not in ``[agents]``).
        """
        name_v = check_operator_name(name)
        ttl = check_ttl(ttl_seconds, required=False)
        agent_v = None if agent_id is None else self.roster_agent(agent_id)
        if agent_v is None and name_v in self.roster:
            # An operator's name is the actor of everything it does: one that is also an agent's
            # ID would make the operator's votes and proposals read as that agent's.
            raise InvalidArgument(
                f"{name_v!r} is a roster agent; an operator token needs another name "
                f"(for a token that acts as {name_v}, add --agent {name_v})"
            )
        token, digest = new_token()
        record = self.db.write(
            lambda conn: insert_token(
                conn, name=name_v, digest=digest, actor=actor, now=self.clock(), ttl=ttl, agent_id=agent_v
            )
        )
        return IssuedToken(record, token)

    def roster_agent(self, agent_id: object) -> str:
        """``agent_id`` if the roster (``[agents]``) has it, else ``invalid_argument`` naming the roster."""
        if not isinstance(agent_id, str) or agent_id not in self.roster:
            known = ", ".join(sorted(self.roster)) or "none"
            raise InvalidArgument(f"agent {agent_id!r} is not in the [agents] roster (known: {known})")
        return agent_id

    def revoke_token(self, token_id: str, *, actor: str) -> tuple[TokenRecord, bool]:
        """Revoke an operator token by its ID; returns it and whether this call revoked it."""
        id_v = _check_label("token_id", token_id)
        return self.db.write(lambda conn: revoke_operator_token_in(conn, id_v, actor=actor, now=self.clock()))

    def require_live_credential(self, credential_id: str) -> None:
        """:class:`Unauthenticated` unless the grant or operator token ``credential_id`` is live.

        Long-lived responses (event streams) call this from time to time, so a credential revoked
        or expired after the response began stops it too.
        """

        def read(conn: sqlite3.Connection) -> sqlite3.Row | None:
            for table in ("capability_grants", "operator_tokens"):
                row: sqlite3.Row | None = conn.execute(
                    f"SELECT revoked_at, expires_at FROM {table} WHERE id = ?", (credential_id,)
                ).fetchone()
                if row is not None:
                    return row
            return None

        row = self.db.read(read)
        if row is None:
            raise Unauthenticated("the credential is not known")
        if row["revoked_at"] is not None:
            raise Unauthenticated("the credential has been revoked")
        if row["expires_at"] is not None and parse_time(str(row["expires_at"])) <= self.clock():
            raise Unauthenticated("the credential has expired")

    def list_tokens(self) -> list[TokenRecord]:
        """Every operator and agent token, newest first."""
        rows = self.db.read(
            lambda conn: conn.execute(
                "SELECT * FROM operator_tokens ORDER BY created_at DESC, id DESC"
            ).fetchall()
        )
        return [token_from_row(row) for row in rows]

    # -- verification --------------------------------------------------------------------------

    def authenticate(self, token: str) -> GrantRecord | TokenRecord:
        """The live grant or operator token behind ``token``, or :class:`Unauthenticated`.

        Error messages never contain the token; unknown, expired and revoked credentials each
        say which, since only a holder of the token can provoke the distinction.
        """
        if not isinstance(token, str) or not looks_like_token(token):
            raise Unauthenticated("the bearer token is malformed")
        digest = hash_token(token)

        def read(conn: sqlite3.Connection) -> tuple[str, sqlite3.Row] | None:
            for kind, table in (("grant", "capability_grants"), ("operator", "operator_tokens")):
                row = conn.execute(f"SELECT * FROM {table} WHERE token_sha256 = ?", (digest,)).fetchone()
                if row is not None:
                    return kind, row
            return None

        found = self.db.read(read)
        if found is None or not hmac.compare_digest(str(found[1]["token_sha256"]), digest):
            raise Unauthenticated("the bearer token is not known")
        kind, row = found
        if row["revoked_at"] is not None:
            raise Unauthenticated("the credential has been revoked")
        expires_at = row["expires_at"]
        if expires_at is not None and parse_time(str(expires_at)) <= self.clock():
            raise Unauthenticated("the credential has expired")
        if kind == "grant":
            return grant_from_row(row)
        record = token_from_row(row)
        if record.agent_id is not None and record.agent_id not in self.roster:
            # Taking an agent off the roster retires its tokens (from the next start of the service).
            raise Unauthenticated(f"agent {record.agent_id!r} is no longer in the [agents] roster")
        return record
