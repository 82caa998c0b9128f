"""Proposals and their immutable patch versions.

``create`` and ``attach_patch`` validate everything first (arguments, the diff, the task, the
author), then stage the patch's bytes (:class:`~store.patches.PatchArtifactStore`: a durable file
with SQLite, held for the transaction with PostgreSQL), then, in one transaction, the rows (with
PostgreSQL, the bytes too) and events. If that transaction fails a staged file is removed again; if
the process dies in between, the orphan file is left for ``roundtable gc`` and no row names it.

Re-attaching the current version's exact bytes is a no-op: no file, no row, no event, the status
and the votes stand, and the answer's patch says ``unchanged: true``. A new patch version keeps
older votes on record but they stop counting: the open round (if any)
is closed and a new one is opened for the new version, and ``proposal.reviews_invalidated`` says
which votes must be renewed.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Callable
from dataclasses import replace
from typing import Any, TypeVar

from store._ids import new_id, utc_now_iso
from store._rows import as_dict
from store.config import ProjectConfig
from store.db import Database
from store.errors import Conflict, Forbidden, InvalidArgument, PatchVersionNotFound
from store.events import append_event
from store.patches import (
    PatchArtifactStore,
    PatchVersion,
    StagedPatch,
    get_version,
    list_versions,
    parse_diff,
)
from store.work._records import Proposal, load_proposal, proposal_from_row
from store.work._rounds import (
    close_open_round,
    counting_votes,
    evaluate_consensus,
    latest_round,
    open_round,
    settle_status,
)
from store.work._tasks import load_task
from store.work._vocabulary import (
    ADVISORY_ROLE,
    MAX_BODY_CHARS,
    MAX_TITLE_CHARS,
    ProposalStatus,
    Risk,
    check_agent_id,
    check_choice,
    check_object_id,
    check_text,
    check_text_list,
    page_query,
)

__all__ = ["ProposalStore", "check_author", "proposal_view"]

_T = TypeVar("_T")


def proposal_view(
    conn: sqlite3.Connection, config: ProjectConfig, proposal: Proposal, *, detail: bool = True
) -> dict[str, Any]:
    """The JSON shape of a proposal: its fields, current patch, round and consensus."""
    patches = list_versions(conn, proposal.id)
    current = next((p for p in patches if p.version == proposal.current_version), None)
    review = latest_round(conn, proposal.id)
    view: dict[str, Any] = {
        **as_dict(proposal),
        "affected_resources": list(proposal.affected_resources),
        "expected_tests": list(proposal.expected_tests),
        "patch": current.to_dict() if current else None,
        "review_round": review.to_dict() if review else None,
        "consensus": evaluate_consensus(conn, config, proposal).to_dict(),
    }
    if detail:
        view["versions"] = [p.to_dict() for p in patches]
    return view


def check_author(config: ProjectConfig, agent_id: str) -> str:
    """The author's roster role; unknown agents and the MemoryOracle may not author."""
    role = config.agents.get(agent_id)
    if role is None:
        raise Forbidden(f"agent {agent_id!r} is not in the roster ([agents] in config.toml)")
    if role == ADVISORY_ROLE:
        raise Forbidden(
            f"agent {agent_id!r} is a {ADVISORY_ROLE}: it is advisory and may not author proposals"
        )
    return role


class ProposalStore:
    """Creates proposals and patch versions; every method is blocking (call it through ``Database.run``)."""

    def __init__(self, db: Database, config: ProjectConfig, patches: PatchArtifactStore):
        self.db = db
        self.config = config
        self.patches = patches

    def _parse(self, patch: object) -> tuple[bytes, list[str]]:
        if not isinstance(patch, str):
            raise InvalidArgument("patch must be the diff text")
        text = patch  # any character but NUL is fair in a diff (form feeds, escapes in fixtures)
        if text and not text.endswith("\n"):
            text += "\n"  # stored exactly as given plus a final newline, so `git apply` agrees
        parsed = parse_diff(text, max_bytes=self.config.policy.max_patch_bytes)
        return text.encode("utf-8"), parsed.touched_files()

    def create(
        self,
        *,
        task_id: object,
        agent_id: object,
        title: object,
        patch: object,
        summary_md: object = "",
        risk: object = None,
        affected_resources: object = None,
        expected_tests: object = None,
        rollback_notes_md: object = "",
        actor: str,
    ) -> tuple[dict[str, Any], PatchVersion]:
        """``proposal.create``: the proposal and its patch version 1."""
        task_v = check_object_id("task_id", task_id)
        agent_v = check_agent_id(agent_id)
        title_v = check_text("title", title, limit=MAX_TITLE_CHARS)
        summary_v = check_text("summary_md", summary_md, limit=MAX_BODY_CHARS, blank_ok=True)
        risk_v = None if risk in (None, "") else check_choice("risk", risk, Risk)
        resources_v = check_text_list("affected_resources", affected_resources or [])
        tests_v = check_text_list("expected_tests", expected_tests or [])
        rollback_v = check_text("rollback_notes_md", rollback_notes_md, limit=MAX_BODY_CHARS, blank_ok=True)
        data, files = self._parse(patch)
        check_author(self.config, agent_v)
        task = self.db.read(lambda conn: load_task(conn, task_v))
        proposal_id = new_id("proposal")
        staged = self.patches.stage(proposal_id, 1, data, files)

        def write(conn: sqlite3.Connection) -> tuple[dict[str, Any], PatchVersion]:
            load_task(conn, task_v)
            now = utc_now_iso()
            proposal = Proposal(
                id=proposal_id,
                task_id=task_v,
                agent_id=agent_v,
                title=title_v,
                summary_md=summary_v,
                risk=risk_v or task.risk,
                affected_resources=tuple(resources_v),
                expected_tests=tuple(tests_v),
                rollback_notes_md=rollback_v,
                status=ProposalStatus.PENDING,
                current_version=1,
                created_by=actor,
                created_at=now,
                updated_at=now,
            )
            _insert(conn, proposal)
            version = self.patches.insert_row(conn, staged, actor=actor)
            common = {"actor": actor, "task_id": task_v, "proposal_id": proposal_id}
            append_event(
                conn,
                "proposal.created",
                **common,
                payload={"title": title_v, "agent_id": agent_v, "risk": proposal.risk},
            )
            append_event(conn, "proposal.patch_attached", **common, payload=_attached(version, False, []))
            return proposal_view(conn, self.config, load_proposal(conn, proposal_id)), version

        return self._commit(staged, write)

    def attach_patch(
        self, *, proposal_id: object, patch: object, actor: str
    ) -> tuple[dict[str, Any], PatchVersion, list[str]]:
        """``proposal.attach_patch``: a new immutable version; returns the votes that stopped counting."""
        id_v = check_object_id("proposal_id", proposal_id)
        data, files = self._parse(patch)
        proposal, current = self.db.read(lambda conn: _with_current(conn, id_v))
        _require_open(proposal)
        if current is not None and current.sha256 == hashlib.sha256(data).hexdigest():
            # The same bytes again: no new version, no event, the reviews and status stand.
            view = self.db.read(lambda conn: proposal_view(conn, self.config, load_proposal(conn, id_v)))
            return view, replace(current, unchanged=True), []
        version_n = proposal.current_version + 1
        staged = self.patches.stage(id_v, version_n, data, files)

        def write(conn: sqlite3.Connection) -> tuple[dict[str, Any], PatchVersion, list[str]]:
            current = load_proposal(conn, id_v)
            _require_open(current)
            if current.current_version != version_n - 1:
                raise Conflict(f"proposal {id_v} got another patch version concurrently; retry")
            invalidated = [v.id for v in counting_votes(conn, id_v, version_n - 1)]
            version = self.patches.insert_row(conn, staged, actor=actor)
            conn.execute(
                "UPDATE proposals SET current_version = ?, updated_at = ? WHERE id = ?",
                (version_n, utc_now_iso(), id_v),
            )
            closed = close_open_round(conn, id_v, f"superseded by patch v{version_n}")
            common = {"actor": actor, "task_id": current.task_id, "proposal_id": id_v}
            reset = bool(invalidated) or closed is not None
            append_event(
                conn, "proposal.patch_attached", **common, payload=_attached(version, reset, invalidated)
            )
            if reset:
                append_event(
                    conn,
                    "proposal.reviews_invalidated",
                    **common,
                    payload={
                        "from_version": version_n - 1,
                        "to_version": version_n,
                        "invalidated_vote_ids": invalidated,
                        "message": f"patch v{version_n} replaces v{version_n - 1}: reviews must be renewed",
                    },
                )
            if closed is not None:
                updated = load_proposal(conn, id_v)
                open_round(conn, self.config, updated, files=files, actor=actor, reason="new_patch_version")
                settle_status(conn, self.config, updated, actor=actor)
            view = proposal_view(conn, self.config, load_proposal(conn, id_v))
            return view, version, invalidated

        return self._commit(staged, write)

    def _commit(self, staged: StagedPatch, write: Callable[[sqlite3.Connection], _T]) -> _T:
        try:
            return self.db.write(write)
        except BaseException:
            self.patches.discard(staged)
            raise

    def get(self, proposal_id: object) -> dict[str, Any]:
        """``proposal.get``: one proposal with every patch version."""
        id_v = check_object_id("proposal_id", proposal_id)
        return self.db.read(lambda conn: proposal_view(conn, self.config, load_proposal(conn, id_v)))

    def patch(self, proposal_id: object, version: int | None = None) -> tuple[PatchVersion, bytes]:
        """One patch version of a proposal (default: the current one) and its bytes, verified
        against the SHA-256 in the database (``patch_version_not_found`` for a version it lacks)."""
        proposal = self.get(proposal_id)
        wanted = proposal["current_version"] if version is None else version
        found = next((v for v in proposal.get("versions", []) if v["version"] == wanted), None)
        if found is None:
            raise PatchVersionNotFound(f"proposal {proposal['id']} has no patch version {wanted}")
        record = PatchVersion(**{**found, "files": tuple(found["files"])})
        return record, self.patches.read_verified(record)

    def list(
        self, *, task_id: object = None, status: object = None, limit: object = None, cursor: object = None
    ) -> tuple[list[dict[str, Any]], str | None]:
        """``proposal.list``: oldest first, filtered, a page at a time."""
        filters = {
            "task_id": None if task_id in (None, "") else check_object_id("task_id", task_id),
            "status": None if status in (None, "") else check_choice("status", status, ProposalStatus),
        }
        sql, params, count = page_query("proposals", filters, cursor=cursor, limit=limit)

        def read(conn: sqlite3.Connection) -> list[dict[str, Any]]:
            rows = conn.execute(sql, params).fetchall()
            return [proposal_view(conn, self.config, proposal_from_row(row), detail=False) for row in rows]

        views = self.db.read(read)
        page = views[:count]
        return page, (page[-1]["id"] if len(views) > count else None)


def _with_current(conn: sqlite3.Connection, proposal_id: str) -> tuple[Proposal, PatchVersion | None]:
    """A proposal and its current patch version (one snapshot)."""
    proposal = load_proposal(conn, proposal_id)
    if proposal.current_version < 1:
        return proposal, None
    return proposal, get_version(conn, proposal_id, proposal.current_version)


def _require_open(proposal: Proposal) -> None:
    if proposal.status in ProposalStatus.TERMINAL:
        raise Conflict(f"proposal {proposal.id} is {proposal.status}; it takes no new patch version")


def _insert(conn: sqlite3.Connection, proposal: Proposal) -> None:
    row = as_dict(proposal)
    row.update(
        affected_resources=json.dumps(list(proposal.affected_resources)),
        expected_tests=json.dumps(list(proposal.expected_tests)),
    )
    conn.execute(
        f"INSERT INTO proposals ({', '.join(row)}) VALUES ({', '.join(':' + key for key in row)})", row
    )


def _attached(version: PatchVersion, reset: bool, invalidated: list[str]) -> dict[str, Any]:
    return {
        "version": version.version,
        "sha256": version.sha256,
        "size_bytes": version.size_bytes,
        "files": list(version.files),
        "path": version.path,
        "reviews_reset": reset,
        "invalidated_vote_ids": invalidated,
    }
