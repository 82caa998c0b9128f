"""``patch.validate`` and ``patch.apply``: the current patch version against the project's files.

Validation never changes the project. It reports each check separately:

- ``artifact_integrity``: the stored file still matches its recorded SHA-256 (read without
  following symlinks);
- ``parse``: the diff parses and validates (:func:`store.diffs.parse_diff`);
- ``paths_inside_repo``: every touched path is reached without a symlink and is a regular file or
  absent (the parser already refused ``..``, absolute paths, ``.git`` and ``.roundtable``);
- ``applies_cleanly``: the touched files are copied into a temporary directory and the patch is
  applied to that copy (``.git`` and ``.roundtable`` are never copied);
- ``git_apply_check``: ``git apply --check`` in the project when it is the top of a git work tree
  (reported as skipped otherwise).

Apply requires consensus on the current version (status ``accepted``), re-validates, writes the
rollback artifact (pre-images) durably, records an ``applying`` transaction, writes the files,
then records ``applied`` with the before/after state hashes and moves the proposal to ``applied``
(``proposal.applied``). If anything fails part-way, the files written so far are restored from the
pre-images, the transaction is marked ``rolled_back`` (``proposal.apply_failed``) and the error
says so.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from store.config import ProjectConfig
from store.db import Database
from store.diffs import ParsedDiff, parse_diff
from store.errors import Conflict, InternalError, InvalidArgument, RoundtableError
from store.events import append_event
from store.hunks import PatchDoesNotApply, apply_diff
from store.ids import new_id, utc_now_iso
from store.patches import PatchArtifactStore, PatchVersion, get_version
from store.proposals import load_proposal, proposal_view
from store.repofiles import FileState, RepoFiles, state_hash, write_rollback_artifact
from store.rounds import close_open_round, evaluate_consensus, leave_review
from store.work import check_object_id

__all__ = ["Check", "Validation", "WorkspaceStore"]

_GIT_TIMEOUT_SECONDS = 60


@dataclass(frozen=True)
class Check:
    """One validation check."""

    name: str
    ok: bool
    detail: str | None = None
    skipped: bool = False

    def to_dict(self) -> dict[str, Any]:
        """``{"name", "ok", "detail"?, "skipped"?}``."""
        out: dict[str, Any] = {"name": self.name, "ok": self.ok}
        if self.detail is not None:
            out["detail"] = self.detail
        if self.skipped:
            out["skipped"] = True
        return out


@dataclass
class Validation:
    """The outcome of validating a version, and what apply needs from it."""

    version: PatchVersion
    checks: list[Check] = field(default_factory=list)
    parsed: ParsedDiff | None = None
    data: bytes = b""
    before: dict[str, FileState] = field(default_factory=dict)
    after: dict[str, FileState] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """Whether every check that ran passed."""
        return all(c.ok or c.skipped for c in self.checks)

    def to_dict(self) -> dict[str, Any]:
        """``{"proposal_id", "version", "sha256", "files", "checks", "ok"}``."""
        return {
            "proposal_id": self.version.proposal_id,
            "version": self.version.version,
            "sha256": self.version.sha256,
            "files": list(self.version.files),
            "checks": [c.to_dict() for c in self.checks],
            "ok": self.ok,
        }


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

    # -- validate ------------------------------------------------------------------------------

    def validate(self, *, proposal_id: object, version: object = None) -> Validation:
        """``patch.validate``: run every check on a version (default: the current one)."""
        id_v = check_object_id("proposal_id", proposal_id)
        if version is not None and (isinstance(version, bool) or not isinstance(version, int) or version < 1):
            raise InvalidArgument("version must be a positive integer")

        def read(conn: sqlite3.Connection) -> PatchVersion:
            row = load_proposal(conn, id_v)
            return get_version(conn, id_v, int(version or row["current_version"]))

        return self._validate(self.db.read(read))

    def _validate(self, version: PatchVersion) -> Validation:
        result = Validation(version)
        checks = result.checks
        try:
            result.data = self.patches.read_verified(version)
            checks.append(Check("artifact_integrity", True))
        except RoundtableError as exc:
            checks.append(Check("artifact_integrity", False, exc.message))
            return _skip_rest(result, "artifact_integrity")
        try:
            result.parsed = parse_diff(
                result.data.decode("utf-8"), max_bytes=self.config.policy.max_patch_bytes
            )
            checks.append(Check("parse", True))
        except (InvalidArgument, UnicodeDecodeError) as exc:
            checks.append(Check("parse", False, getattr(exc, "message", str(exc))))
            return _skip_rest(result, "parse")
        files = self._files()
        try:
            result.before = {path: files.read(path) for path in result.parsed.touched_files()}
            checks.append(Check("paths_inside_repo", True))
        except RoundtableError as exc:
            checks.append(Check("paths_inside_repo", False, exc.message))
            return _skip_rest(result, "paths_inside_repo")
        checks.append(self._apply_to_copy(result))
        checks.append(self._git_check(result))
        return result

    def _apply_to_copy(self, result: Validation) -> Check:
        assert result.parsed is not None
        with tempfile.TemporaryDirectory(prefix="roundtable-validate-") as scratch:
            copy = RepoFiles(Path(scratch), max_bytes=self.config.policy.max_apply_file_bytes)
            for path, state in result.before.items():
                if state.content is not None:
                    copy.write(path, state)
            current = {path: copy.read(path).content for path in result.before}
            try:
                new = apply_diff(result.parsed, current)
            except PatchDoesNotApply as exc:
                return Check("applies_cleanly", False, str(exc))
            modes = _new_modes(result.parsed, result.before)
            for path, content in new.items():
                copy.write(path, FileState(content, modes.get(path)))
            result.after = {path: copy.read(path) for path in result.before}
        return Check("applies_cleanly", True)

    def _git_check(self, result: Validation) -> Check:
        assert result.parsed is not None
        if not _is_git_toplevel(self.root):
            return Check(
                "git_apply_check", True, "the project root is not the top of a git work tree", skipped=True
            )
        argv = ["git", "apply", "--check", "--whitespace=nowarn", f"-p{result.parsed.strip}", "-"]
        try:
            done = subprocess.run(
                argv,
                cwd=self.root,
                input=result.data,
                capture_output=True,
                timeout=_GIT_TIMEOUT_SECONDS,
                env=_git_env(),
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return Check("git_apply_check", False, f"git apply --check could not run: {type(exc).__name__}")
        if done.returncode != 0:
            return Check("git_apply_check", False, done.stderr.decode("utf-8", "replace").strip()[:2000])
        return Check("git_apply_check", True)

    # -- apply ---------------------------------------------------------------------------------

    def apply(self, *, proposal_id: object, actor: str) -> dict[str, Any]:
        """``patch.apply``; see the module docstring. Answers ``{"proposal", "transaction", "checks"}``."""
        id_v = check_object_id("proposal_id", proposal_id)

        def read(conn: sqlite3.Connection) -> PatchVersion:
            row = load_proposal(conn, id_v)
            _require_consensus(conn, self.config, row)
            return get_version(conn, id_v, int(row["current_version"]))

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
        row = load_proposal(conn, version.proposal_id)
        _require_consensus(conn, self.config, row)
        if int(row["current_version"]) != version.version:
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
        append_event(
            conn,
            "proposal.apply_started",
            actor=actor,
            task_id=row["task_id"],
            proposal_id=row["id"],
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
        row = load_proposal(conn, version.proposal_id)
        if row["status"] != "accepted" or int(row["current_version"]) != version.version:
            raise Conflict(
                f"proposal {row['id']} changed ({row['status']}) while its patch was being applied"
            )
        now = utc_now_iso()
        conn.execute(
            "UPDATE apply_transactions SET status = 'applied', after_hash = ?, finished_at = ? WHERE id = ?",
            (after, now, txn_id),
        )
        conn.execute("UPDATE proposals SET status = 'applied', updated_at = ? WHERE id = ?", (now, row["id"]))
        close_open_round(conn, row["id"], "proposal applied")
        leave_review(conn, row["id"], actor=actor, status="applied")
        txn = _transaction(conn, txn_id)
        append_event(
            conn,
            "proposal.applied",
            actor=actor,
            task_id=row["task_id"],
            proposal_id=row["id"],
            payload={
                "transaction_id": txn_id,
                "patch_version": version.version,
                "patch_sha256": version.sha256,
                "files": txn["files"],
                "before_hash": txn["before_hash"],
                "after_hash": after,
            },
        )
        return {
            "proposal": proposal_view(conn, self.config, load_proposal(conn, row["id"])),
            "transaction": txn,
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
        row = load_proposal(conn, proposal_id)
        append_event(
            conn,
            "proposal.apply_failed",
            actor=actor,
            task_id=row["task_id"],
            proposal_id=proposal_id,
            payload={
                "transaction_id": txn_id,
                "error": error,
                "restored": restored,
                "rollback_path": rollback,
            },
        )

    def transactions(self, proposal_id: str) -> list[dict[str, Any]]:
        """Every apply transaction of a proposal, oldest first."""

        def read(conn: sqlite3.Connection) -> list[dict[str, Any]]:
            rows = conn.execute(
                "SELECT id FROM apply_transactions WHERE proposal_id = ? ORDER BY started_at, id",
                (proposal_id,),
            ).fetchall()
            return [_transaction(conn, row["id"]) for row in rows]

        return self.db.read(read)


def _require_consensus(conn: sqlite3.Connection, config: ProjectConfig, row: sqlite3.Row) -> None:
    if row["status"] == "applied":
        raise Conflict(f"proposal {row['id']} is already applied")
    if row["status"] != "accepted" or not evaluate_consensus(conn, config, row).reached:
        raise Conflict(
            f"proposal {row['id']} has not reached consensus on its current patch version"
            f" (status {row['status']})"
        )


def _transaction(conn: sqlite3.Connection, txn_id: str) -> dict[str, Any]:
    row = conn.execute("SELECT * FROM apply_transactions WHERE id = ?", (txn_id,)).fetchone()
    out = {key: row[key] for key in row.keys()}  # noqa: SIM118 - sqlite3.Row is not a mapping
    out["files"] = json.loads(row["files"])
    return out


def _skip_rest(result: Validation, failed: str) -> Validation:
    names = ["artifact_integrity", "parse", "paths_inside_repo", "applies_cleanly", "git_apply_check"]
    for name in names[names.index(failed) + 1 :]:
        result.checks.append(Check(name, False, f"not run: {failed} failed", skipped=True))
    return result


def _new_modes(parsed: ParsedDiff, before: dict[str, FileState]) -> dict[str, int]:
    """Permission bits after the patch: a mode header wins, else the old file's, else 0644."""
    modes: dict[str, int] = {}
    for diff in parsed.files:
        if diff.new_path is None:
            continue
        if diff.new_mode is not None:
            modes[diff.path] = 0o755 if diff.new_mode == "100755" else 0o644
        else:
            old = before.get(diff.old_path or diff.path)
            modes[diff.path] = old.mode if old is not None and old.mode is not None else 0o644
    return modes


def _git_env() -> dict[str, str]:
    # Variables such as GIT_DIR or GIT_INDEX_FILE from the caller's environment must not redirect git.
    return {key: value for key, value in os.environ.items() if not key.startswith("GIT_")}


def _is_git_toplevel(root: Path) -> bool:
    if shutil.which("git") is None:
        return False
    try:
        done = subprocess.run(
            ["git", "rev-parse", "--show-toplevel"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=_GIT_TIMEOUT_SECONDS,
            env=_git_env(),
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    if done.returncode != 0:
        return False
    try:
        return Path(done.stdout.strip()).resolve() == root.resolve()
    except OSError:
        return False
