"""``patch.validate`` and ``patch.apply``: the current patch version against the project's files.

Validation (:mod:`store.patches._validate`) never changes the project and reports each check. Apply
requires consensus on the current version (status ``accepted``), re-validates, writes the
rollback artifact (pre-images) durably, records an ``applying`` transaction, writes the files,
then records ``applied`` with the before/after state hashes and moves the proposal to ``applied``
(``proposal.applied``). If anything fails part-way, the files written so far are restored from the
pre-images, the transaction is marked ``rolled_back`` (``proposal.apply_failed``) and the error
says so.
"""

from __future__ import annotations

import json
import sqlite3
from datetime import timedelta
from pathlib import Path
from typing import Any

from store._ids import new_id, utc_now, utc_now_iso
from store._text import check_int
from store.config import ProjectConfig
from store.db import Database
from store.errors import Conflict, InternalError, RoundtableError
from store.patches import (
    FileState,
    PatchArtifactStore,
    PatchValidator,
    PatchVersion,
    RepoFiles,
    Validation,
    get_version,
    read_rollback_artifact,
    state_hash,
    write_rollback_artifact,
)
from store.work._proposals import proposal_view
from store.work._records import (
    ApplyTransaction,
    Proposal,
    load_proposal,
    load_transaction,
    proposal_event,
    set_status,
    transaction_from_row,
)
from store.work._rounds import close_open_round, evaluate_consensus, leave_review
from store.work._vocabulary import ProposalStatus, check_object_id

__all__ = ["WorkspaceStore"]


class WorkspaceStore:
    """Validates and applies patch versions to the project; blocking (call through ``Database.run``)."""

    files_class: type[RepoFiles] = RepoFiles
    """The file access used by apply; a test subclass injects faults."""

    def __init__(self, db: Database, root: Path, config: ProjectConfig, patches: PatchArtifactStore):
        self.db = db
        self.root = root
        self.config = config
        self.patches = patches

    def _files(self) -> RepoFiles:
        return self.files_class(self.root, max_bytes=self.config.policy.max_apply_file_bytes)

    def _validate(self, version: PatchVersion) -> Validation:
        return PatchValidator(self.root, self.config, self.patches, self._files).run(version)

    # -- validate ------------------------------------------------------------------------------

    def validate(self, *, proposal_id: object, version: object = None) -> Validation:
        """``patch.validate``: run every check on a version (default: the current one)."""
        id_v = check_object_id("proposal_id", proposal_id)
        version_v = None if version is None else check_int("version", version, minimum=1)

        def read(conn: sqlite3.Connection) -> PatchVersion:
            proposal = load_proposal(conn, id_v)
            return get_version(conn, id_v, version_v or proposal.current_version)

        return self._validate(self.db.read(read))

    def apply(self, *, proposal_id: object, actor: str) -> dict[str, Any]:
        """``patch.apply``; see the module docstring. Answers ``{"proposal", "transaction", "checks"}``."""
        id_v = check_object_id("proposal_id", proposal_id)

        def read(conn: sqlite3.Connection) -> PatchVersion:
            proposal = load_proposal(conn, id_v)
            _require_consensus(conn, self.config, proposal)
            return get_version(conn, id_v, proposal.current_version)

        checked = self._validate(self.db.read(read))
        version = checked.version
        if not checked.ok:
            raise Conflict(
                f"patch v{version.version} of {id_v} does not validate; nothing was changed",
                details={"checks": [c.to_dict() for c in checked.checks]},
            )
        txn_id = new_id("A")
        before_hash = state_hash(checked.before)
        header = {
            "proposal_id": id_v,
            "patch_version": version.version,
            "patch_sha256": version.sha256,
            "before_hash": before_hash,
        }
        rollback = write_rollback_artifact(self.root, txn_id, header, checked.before)
        self.db.write(lambda conn: self._begin(conn, checked, txn_id, before_hash, rollback, actor))
        files = self._files()
        written: list[str] = []
        try:
            for path in sorted(checked.after):
                if files.read(path) != checked.before[path]:
                    raise Conflict(f"{path} changed while the patch was being applied")
                written.append(path)
                files.write(path, checked.after[path])
            after = {path: files.read(path) for path in checked.after}
            if after != checked.after:
                raise InternalError("the files do not hold the patched contents after writing")
            answer: dict[str, Any] = self.db.write(
                lambda conn: self._finish(conn, checked, txn_id, state_hash(after), actor)
            )
            return answer
        except BaseException as exc:
            restored = self._restore(files, checked.before, written, before_hash)
            error = exc.message if isinstance(exc, RoundtableError) else f"{type(exc).__name__}: {exc}"
            self.db.write(
                lambda conn: self._fail(conn, id_v, txn_id, error[:2000], restored, rollback, actor)
            )
            if not isinstance(exc, Exception):
                raise
            what = (
                "the files were restored" if restored else f"RESTORE FAILED: restore by hand from {rollback}"
            )
            raise Conflict(f"applying {id_v} failed part-way ({error}); {what}") from exc

    def _restore(
        self, files: RepoFiles, before: dict[str, FileState], written: list[str], expected: str
    ) -> bool:
        try:
            for path in reversed(written):
                files.write(path, before[path])
            files.remove_created_dirs()
            return state_hash({path: files.read(path) for path in before}) == expected
        except Exception:  # reported through the transaction row and the error; never masks the cause
            return False

    def _begin(
        self,
        conn: sqlite3.Connection,
        checked: Validation,
        txn_id: str,
        before: str,
        rollback: str,
        actor: str,
    ) -> None:
        version = checked.version
        proposal = load_proposal(conn, version.proposal_id)
        _require_consensus(conn, self.config, proposal)
        if proposal.current_version != version.version:
            raise Conflict(f"proposal {version.proposal_id} got a new patch version; validate again")
        if conn.execute(
            "SELECT 1 FROM apply_transactions WHERE proposal_id = ? AND status IN ('applying', 'applied')",
            (version.proposal_id,),
        ).fetchone():
            raise Conflict(f"proposal {version.proposal_id} is being applied or was applied already")
        conn.execute(
            "INSERT INTO apply_transactions (id, proposal_id, patch_version, patch_sha256, status, files,"
            " before_hash, rollback_path, actor, started_at) VALUES (?, ?, ?, ?, 'applying', ?, ?, ?, ?, ?)",
            (
                txn_id,
                version.proposal_id,
                version.version,
                version.sha256,
                json.dumps(sorted(checked.after)),
                before,
                rollback,
                actor,
                utc_now_iso(),
            ),
        )
        proposal_event(
            conn,
            "proposal.apply_started",
            proposal,
            actor=actor,
            payload={
                "transaction_id": txn_id,
                "patch_version": version.version,
                "before_hash": before,
                "rollback_path": rollback,
            },
        )

    def _finish(
        self, conn: sqlite3.Connection, checked: Validation, txn_id: str, after: str, actor: str
    ) -> dict[str, Any]:
        version = checked.version
        proposal = load_proposal(conn, version.proposal_id)
        if proposal.status is not ProposalStatus.ACCEPTED or proposal.current_version != version.version:
            raise Conflict(
                f"proposal {proposal.id} changed ({proposal.status}) while its patch was being applied"
            )
        now = utc_now_iso()
        conn.execute(
            "UPDATE apply_transactions SET status = 'applied', after_hash = ?, finished_at = ? WHERE id = ?",
            (after, now, txn_id),
        )
        set_status(conn, proposal.id, ProposalStatus.APPLIED, now=now)
        close_open_round(conn, proposal.id, "proposal applied")
        leave_review(conn, proposal.id, actor=actor, status=ProposalStatus.APPLIED)
        txn = load_transaction(conn, txn_id)
        proposal_event(
            conn,
            "proposal.applied",
            proposal,
            actor=actor,
            payload={
                "transaction_id": txn_id,
                "patch_version": version.version,
                "patch_sha256": version.sha256,
                "files": txn.files,
                "before_hash": txn.before_hash,
                "after_hash": after,
            },
        )
        return {
            "proposal": proposal_view(conn, self.config, load_proposal(conn, proposal.id)),
            "transaction": txn.to_dict(),
            "checks": [c.to_dict() for c in checked.checks],
        }

    def _fail(
        self,
        conn: sqlite3.Connection,
        proposal_id: str,
        txn_id: str,
        error: str,
        restored: bool,
        rollback: str,
        actor: str,
    ) -> None:
        conn.execute(
            "UPDATE apply_transactions SET status = ?, error = ?, finished_at = ? WHERE id = ?",
            ("rolled_back" if restored else "failed", error, utc_now_iso(), txn_id),
        )
        proposal_event(
            conn,
            "proposal.apply_failed",
            load_proposal(conn, proposal_id),
            actor=actor,
            payload={
                "transaction_id": txn_id,
                "error": error,
                "restored": restored,
                "rollback_path": rollback,
            },
        )

    def recover_interrupted(self, *, grace_seconds: float, actor: str) -> list[dict[str, Any]]:
        """Transactions a crash left ``applying``: restore the pre-images, mark them rolled back.

        Only transactions started more than ``grace_seconds`` ago are touched, so a live apply in
        another process (which takes milliseconds) is never disturbed.
        """
        cutoff = (utc_now() - timedelta(seconds=grace_seconds)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        stuck = self._transactions("status = 'applying' AND started_at <= ?", cutoff)
        recovered = []
        for txn in stuck:
            files = self._files()
            try:
                pre = read_rollback_artifact(self.root, txn.id)
                for path, state in sorted(pre.items()):
                    files.write(path, state)
                restored = state_hash({path: files.read(path) for path in pre}) == txn.before_hash
            except (OSError, ValueError, KeyError, RoundtableError):
                restored = False
            self._mark_interrupted(txn, restored, actor)
            recovered.append({"transaction_id": txn.id, "proposal_id": txn.proposal_id, "restored": restored})
        return recovered

    def _mark_interrupted(self, txn: ApplyTransaction, restored: bool, actor: str) -> None:
        def write(conn: sqlite3.Connection) -> None:
            error = "interrupted before it finished; recovered by gc"
            self._fail(conn, txn.proposal_id, txn.id, error, restored, txn.rollback_path, actor)

        self.db.write(write)

    def transactions(self, proposal_id: str) -> list[dict[str, Any]]:
        """Every apply transaction of a proposal, oldest first."""
        return [txn.to_dict() for txn in self._transactions("proposal_id = ?", proposal_id)]

    def _transactions(self, where: str, value: str) -> list[ApplyTransaction]:
        sql = f"SELECT * FROM apply_transactions WHERE {where} ORDER BY started_at, id"
        rows = self.db.read(lambda conn: conn.execute(sql, (value,)).fetchall())
        return [transaction_from_row(row) for row in rows]


def _require_consensus(conn: sqlite3.Connection, config: ProjectConfig, proposal: Proposal) -> None:
    if proposal.status is ProposalStatus.APPLIED:
        raise Conflict(f"proposal {proposal.id} is already applied")
    if (
        proposal.status is not ProposalStatus.ACCEPTED
        or not evaluate_consensus(conn, config, proposal).reached
    ):
        raise Conflict(
            f"proposal {proposal.id} has not reached consensus on its current patch version"
            f" (status {proposal.status})"
        )
