"""Validating a patch version against the project's files without changing them.

Each check is reported separately:

- ``artifact_integrity``: the stored bytes still match their recorded SHA-256 (a file read through
  the safe reader, without following symlinks, or a ``patch_blobs`` row on PostgreSQL);
- ``parse``: the diff parses and validates (:func:`store.patches._diffs.parse_diff`);
- ``paths_inside_repo``: every touched path is reached without a symlink and is a regular file or
  absent (the parser already refused ``..``, absolute paths, ``.git`` and ``.roundtable``);
- ``applies_cleanly``: the touched files are copied into a temporary directory and the patch is
  applied to that copy (``.git`` and ``.roundtable`` are never copied);
- ``git_apply_check``: ``git apply --check`` in the project when it is the top of a git work tree
  (reported as skipped otherwise).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from store.config import ProjectConfig
from store.errors import InvalidArgument, RoundtableError
from store.patches._artifacts import PatchArtifactStore, PatchVersion
from store.patches._diffs import ParsedDiff, parse_diff
from store.patches._hunks import PatchDoesNotApply, apply_diff
from store.patches._worktree import FileState, RepoFiles

__all__ = ["Check", "PatchValidator", "Validation"]

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


class PatchValidator:
    """Runs the checks for one version; ``files`` opens the project's files (a seam for faults)."""

    def __init__(
        self, root: Path, config: ProjectConfig, patches: PatchArtifactStore, files: Callable[[], RepoFiles]
    ):
        self.root = root
        self.config = config
        self.patches = patches
        self._files = files

    def run(self, version: PatchVersion) -> Validation:
        """Every check, in order; a failed early check marks the later ones skipped."""
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
        except OSError as exc:  # unreadable (permissions) or not a path at all
            checks.append(Check("paths_inside_repo", False, f"{type(exc).__name__}: {exc.strerror or exc}"))
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
