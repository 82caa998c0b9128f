"""Idempotent mutations: an ``Idempotency-Key`` and the first answer, kept in the database.

:func:`commit` runs a mutation in one write transaction. With an :class:`IdempotencyClaim` it
first looks the key up *in that transaction*: a stored answer for the same route and request hash
is returned as it was (nothing runs, nothing changes); the same key with another route or body is
a ``conflict``. Otherwise the mutation runs and its answer is stored in the same transaction, so
a committed change always has its key and a rolled-back one never does. Keys live in SQLite, not
in process memory, so a replay after a restart answers the same. Errors are not stored: a
failed mutation changed nothing, so retrying it under the same key simply tries again.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from store._ids import utc_now_iso
from store.db import Database
from store.errors import Conflict

__all__ = ["Committed", "IdempotencyClaim", "Mutation", "commit", "run_claimed"]

Mutation = Callable[[sqlite3.Connection], dict[str, Any]]
"""A change to make inside one write transaction; returns the JSON answer."""


@dataclass(frozen=True)
class IdempotencyClaim:
    """Who sent which key with which request (method, path and query) and body hash."""

    actor: str
    key: str
    route: str
    request_sha256: str


@dataclass(frozen=True)
class Committed:
    """The answer of a committed mutation (or of its first run, when ``replayed``)."""

    body: dict[str, Any]
    status: int
    replayed: bool = False


def run_claimed(
    conn: sqlite3.Connection, mutation: Mutation, claim: IdempotencyClaim | None, *, status: int = 200
) -> Committed:
    """Inside an open write transaction: replay the stored answer, or run and remember it."""
    if claim is None:
        return Committed(mutation(conn), status)
    row = conn.execute(
        "SELECT route, request_sha256, response_status, response_body FROM idempotency_keys"
        " WHERE actor = ? AND key = ?",
        (claim.actor, claim.key),
    ).fetchone()
    if row is not None:
        if row["route"] != claim.route or row["request_sha256"] != claim.request_sha256:
            raise Conflict("this Idempotency-Key was already used for a different request; use a new key")
        return Committed(json.loads(row["response_body"]), int(row["response_status"]), replayed=True)
    body = mutation(conn)
    conn.execute(
        "INSERT INTO idempotency_keys (actor, key, route, request_sha256, response_status, response_body,"
        " created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
        (
            claim.actor,
            claim.key,
            claim.route,
            claim.request_sha256,
            status,
            json.dumps(body, sort_keys=True),
            utc_now_iso(),
        ),
    )
    return Committed(body, status)


def commit(
    db: Database, mutation: Mutation, claim: IdempotencyClaim | None = None, *, status: int = 200
) -> Committed:
    """Run ``mutation`` in one write transaction, honouring ``claim`` (blocking).

    ``status`` is the HTTP status a first success answers with; a replay answers with the
    status stored the first time.
    """
    return db.write(lambda conn: run_claimed(conn, mutation, claim, status=status))
