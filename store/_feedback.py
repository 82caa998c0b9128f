"""Maintainers' feedback on oracle warnings, and what it says about each provider.

A maintainer (an operator) marks a ``memory.oracle_warning`` event ``confirmed`` or ``dismissed``,
with an optional short reason. Feedback is an event of its own, ``memory.oracle_feedback``; the
warning is never edited. :meth:`OracleFeedback.give` runs one write transaction: it checks the
verdict and reason, loads the warning (``not_found`` if no event has that ID, ``invalid_argument``
if the event is not a warning, and then nothing is written), appends the feedback event with the
warning's task, proposal, launch and provider, and, when asked (HTTP and console), its audit row.

**Which feedback counts.** Each operator's latest verdict on a warning replaces their earlier
ones. A warning's verdict is the verdict more operators hold; on a tie, the most recent of those
latest verdicts decides. A warning without feedback is ``unreviewed``.

:meth:`OracleFeedback.stats` reports per provider (read from the launch record of the warning's
``launch_id``; ``"unknown"`` when there is none): warnings, confirmed, dismissed, unreviewed and
precision = confirmed / (confirmed + dismissed), ``None`` with no reviewed warning. It reads the
warnings and the feedback through the ``events_by_type`` index and each launch by its key: the
cost grows with the number of warnings and verdicts, never with the rest of the log.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from store._oracle import WARNING_EVENT
from store._rows import as_dict
from store._text import check_int, check_text
from store.db import Database
from store.errors import InvalidArgument, NotFound
from store.events import Committed, IdempotencyClaim, append_audit, append_event, commit

__all__ = [
    "FEEDBACK_EVENT",
    "MAX_REASON_CHARS",
    "UNKNOWN_PROVIDER",
    "OracleFeedback",
    "ProviderStats",
    "Verdict",
    "warning_verdict",
]

FEEDBACK_EVENT = "memory.oracle_feedback"
MAX_REASON_CHARS = 500
UNKNOWN_PROVIDER = "unknown"


class Verdict(StrEnum):
    """What a maintainer says of a warning."""

    CONFIRMED = "confirmed"
    DISMISSED = "dismissed"


@dataclass(frozen=True)
class ProviderStats:
    """How one provider's warnings were judged by maintainers."""

    provider: str
    warnings: int
    confirmed: int
    dismissed: int
    unreviewed: int

    @property
    def precision(self) -> float | None:
        """confirmed / (confirmed + dismissed), or ``None`` when no warning was reviewed."""
        reviewed = self.confirmed + self.dismissed
        return None if reviewed == 0 else self.confirmed / reviewed

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape (``precision`` rounded to four places, or ``null``)."""
        precision = self.precision
        return {**as_dict(self), "precision": None if precision is None else round(precision, 4)}


def warning_verdict(latest: Iterable[tuple[int, str]]) -> str | None:
    """A warning's verdict from each operator's latest ``(event_id, verdict)``; ``None`` if none."""
    votes = sorted(latest)
    if not votes:
        return None
    confirmed = sum(1 for _, verdict in votes if verdict == Verdict.CONFIRMED)
    dismissed = len(votes) - confirmed
    if confirmed != dismissed:
        return str(Verdict.CONFIRMED if confirmed > dismissed else Verdict.DISMISSED)
    return votes[-1][1]


def _check_event_id(value: object) -> int:
    # Bounded above too: an ID past SQLite's 64-bit range would fail in the driver (a crash, not a 400).
    return check_int("warning_event_id", value, minimum=1)


def _check_verdict(value: object) -> Verdict:
    if value not in tuple(Verdict):
        raise InvalidArgument(f"verdict must be one of {', '.join(Verdict)}")
    return Verdict(str(value))


def _check_reason(value: object) -> str | None:
    if value is None or value == "":
        return None
    return check_text("reason", value, limit=MAX_REASON_CHARS)


def _provider(conn: sqlite3.Connection, launch_id: object) -> str:
    if not isinstance(launch_id, str):
        return UNKNOWN_PROVIDER
    row = conn.execute("SELECT provider FROM role_launches WHERE id = ?", (launch_id,)).fetchone()
    return UNKNOWN_PROVIDER if row is None or not row["provider"] else str(row["provider"])


def _latest_per_actor(rows: Iterable[sqlite3.Row]) -> dict[int, dict[str, tuple[int, str]]]:
    """``{warning_id: {actor: (event_id, verdict)}}``: each actor's latest feedback per warning."""
    latest: dict[int, dict[str, tuple[int, str]]] = {}
    for row in rows:
        payload = json.loads(row["payload"] or "{}")
        warning_id = payload.get("warning_event_id")
        if not isinstance(warning_id, int):
            continue
        by_actor = latest.setdefault(warning_id, {})
        current = by_actor.get(row["actor"])
        if current is None or int(row["id"]) > current[0]:
            by_actor[row["actor"]] = (int(row["id"]), str(payload.get("verdict")))
    return latest


class OracleFeedback:
    """Feedback on oracle warnings: the one write and its reads; blocking (use ``Database.run``)."""

    def __init__(self, db: Database):
        self.db = db

    def give(
        self,
        warning_event_id: object,
        verdict: object,
        *,
        actor: str,
        reason: object = None,
        audit: bool = False,
        claim: IdempotencyClaim | None = None,
    ) -> Committed:
        """Write one ``memory.oracle_feedback`` event (and its audit row when ``audit``): ``{"event"}``."""
        event_id = _check_event_id(warning_event_id)
        checked = _check_verdict(verdict)
        why = _check_reason(reason)

        def write(conn: sqlite3.Connection) -> dict[str, Any]:
            row = conn.execute("SELECT * FROM events WHERE id = ?", (event_id,)).fetchone()
            if row is None:
                raise NotFound(f"no event has ID {event_id}")
            if row["type"] != WARNING_EVENT:
                raise InvalidArgument(f"event {event_id} is a {row['type']} event, not a {WARNING_EVENT}")
            warning = json.loads(row["payload"] or "{}")
            event = append_event(
                conn,
                FEEDBACK_EVENT,
                actor=actor,
                task_id=row["task_id"],
                proposal_id=row["proposal_id"],
                payload={
                    "warning_event_id": event_id,
                    "verdict": str(checked),
                    "reason": why,
                    "proposal_id": row["proposal_id"],
                    "task_id": row["task_id"],
                    "launch_id": warning.get("launch_id"),
                    "provider": _provider(conn, warning.get("launch_id")),
                },
            )
            if audit:
                append_audit(
                    conn,
                    "oracle.feedback",
                    actor=actor,
                    target_type="warning",
                    target_id=str(event_id),
                    event=event,
                    details={"verdict": str(checked)},
                )
            return {"event": event.to_dict()}

        return commit(self.db, write, claim, status=201)

    def verdicts(self, proposal_id: str) -> dict[int, str]:
        """``{warning_event_id: verdict}`` for the reviewed warnings of one proposal."""

        def read(conn: sqlite3.Connection) -> dict[int, str]:
            rows = conn.execute(
                "SELECT id, actor, payload FROM events WHERE proposal_id = ? AND type = ? ORDER BY id",
                (proposal_id, FEEDBACK_EVENT),
            ).fetchall()
            found = {}
            for warning_id, by_actor in _latest_per_actor(rows).items():
                verdict = warning_verdict(by_actor.values())
                if verdict is not None:
                    found[warning_id] = verdict
            return found

        return self.db.read(read)

    def stats(self) -> dict[str, Any]:
        """``{"providers": [...]}``: per provider, by name, the counts and precision."""
        return {"providers": [item.to_dict() for item in self.db.read(self._stats)]}

    def _stats(self, conn: sqlite3.Connection) -> list[ProviderStats]:
        feedback = _latest_per_actor(
            conn.execute("SELECT id, actor, payload FROM events WHERE type = ?", (FEEDBACK_EVENT,))
        )
        counts: dict[str, list[int]] = {}
        providers: dict[object, str] = {}
        warnings = conn.execute(
            "SELECT id, json_extract(payload, '$.launch_id') AS launch_id FROM events WHERE type = ?",
            (WARNING_EVENT,),
        )
        for row in warnings:
            launch_id = row["launch_id"]
            if launch_id not in providers:
                providers[launch_id] = _provider(conn, launch_id)
            tally = counts.setdefault(providers[launch_id], [0, 0, 0])
            verdict = warning_verdict(feedback.get(int(row["id"]), {}).values())
            tally[0 if verdict == Verdict.CONFIRMED else 1 if verdict == Verdict.DISMISSED else 2] += 1
        return [ProviderStats(name, sum(t), t[0], t[1], t[2]) for name, t in sorted(counts.items())]
