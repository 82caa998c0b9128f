"""The test reviewer's workspace, staged from real git repositories: what enters the tar and what never
does, the patch applied or not, refusals, the symlink policy, the size cap and a deterministic tar."""

from __future__ import annotations

import hashlib
import io
import json
import os
import subprocess
import tarfile
import tempfile
from pathlib import Path
from typing import Any

import pytest

from store.errors import Conflict, InvalidArgument
from supervisor.review import StagedWorkspace, stage_review_workspace

COMMAND = ["python", "-m", "pytest", "-q"]
GIT = [
    "git",
    "-c",
    "user.name=Test",
    "-c",
    "user.email=test@example.invalid",
    "-c",
    "init.defaultBranch=main",
]

CHANGE_APP = """\
diff --git a/app.py b/app.py
--- a/app.py
+++ b/app.py
@@ -1,2 +1,2 @@
 def add(a, b):
-    return a + b
+    return a + b + 0
diff --git a/tools/run.sh b/tools/run.sh
new file mode 100755
--- /dev/null
+++ b/tools/run.sh
@@ -0,0 +1,2 @@
+#!/bin/sh
+echo run
diff --git a/old/gone.txt b/old/gone.txt
deleted file mode 100644
--- a/old/gone.txt
+++ /dev/null
@@ -1 +0,0 @@
-bye
"""

DOES_NOT_APPLY = """\
diff --git a/app.py b/app.py
--- a/app.py
+++ b/app.py
@@ -1,2 +1,2 @@
 def add(a, b):
-    return a - b
+    return a * b
"""


def git(repo: Path, *args: str) -> str:
    env = {key: value for key, value in os.environ.items() if not key.startswith("GIT_")}
    done = subprocess.run([*GIT, *args], cwd=repo, capture_output=True, text=True, check=True, env=env)
    return done.stdout


def make_repo(root: Path, files: dict[str, str], *, commit: bool = True) -> Path:
    root.mkdir(parents=True)
    git(root, "init", "-q")
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    if files:
        git(root, "add", "-f", *files)
    if commit:
        git(root, "commit", "-q", "-m", "base", "--allow-empty")
    return root


BASE = {
    "app.py": "def add(a, b):\n    return a + b\n",
    "tests/test_app.py": "from app import add\n\ndef test_add():\n    assert add(2, 2) == 4\n",
    "old/gone.txt": "bye\n",
}


def stage(root: Path, patch: str, **options: Any) -> StagedWorkspace:
    data = patch.encode()
    return stage_review_workspace(
        root, data, proposal_id="P-1", patch_version=2, patch_sha256=hashlib.sha256(data).hexdigest(),
        command=COMMAND, timeout_seconds=30, **options,
    )  # fmt: skip


def members(staged: StagedWorkspace) -> dict[str, tarfile.TarInfo]:
    with tarfile.open(fileobj=io.BytesIO(staged.tar), mode="r:") as tar:
        return {member.name: member for member in tar.getmembers()}


def contents(staged: StagedWorkspace) -> dict[str, bytes]:
    with tarfile.open(fileobj=io.BytesIO(staged.tar), mode="r:") as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}  # type: ignore[union-attr]


def test_only_tracked_files_enter_never_roundtable_untracked_ignored_or_uncommitted(tmp_path: Path) -> None:
    repo = make_repo(
        tmp_path / "repo", {**BASE, ".roundtable/config.toml": "x = 1\n", ".gitignore": "build/\n"}
    )
    (repo / "notes.txt").write_text("untracked\n")
    (repo / "build").mkdir()
    (repo / "build" / "out.bin").write_bytes(b"ignored")
    (repo / ".roundtable" / "roundtable.db").write_bytes(b"the store")
    (repo / "app.py").write_text("uncommitted edit\n")
    staged = stage(repo, DOES_NOT_APPLY.replace("a - b", "a + b"))
    files = contents(staged)
    assert sorted(files) == [".gitignore", "app.py", "old/gone.txt", "tests/test_app.py"]
    assert files["app.py"] == b"def add(a, b):\n    return a * b\n"  # HEAD's bytes, then the patch
    assert staged.manifest["skipped"]["roundtable"] == 1
    assert staged.manifest["files"] == 4


def test_a_patch_that_applies_changes_adds_deletes_and_sets_modes(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", BASE)
    staged = stage(repo, CHANGE_APP)
    files, infos = contents(staged), members(staged)
    assert files["app.py"].endswith(b"a + b + 0\n")
    assert files["tools/run.sh"] == b"#!/bin/sh\necho run\n"
    assert infos["tools/run.sh"].mode == 0o755 and infos["app.py"].mode == 0o644
    assert "old/gone.txt" not in files and "old" not in infos  # an emptied directory goes too
    manifest = staged.manifest
    assert manifest == {
        "proposal_id": "P-1", "patch_version": 2,
        "patch_sha256": hashlib.sha256(CHANGE_APP.encode()).hexdigest(),
        "command": COMMAND, "timeout_seconds": 30, "applied": True, "apply_error": None, "files": 3,
        "bytes": len(staged.tar), "skipped": {"roundtable": 0, "symlinks": 0, "submodules": 0, "unsafe": 0},
    }  # fmt: skip
    assert json.loads(staged.manifest_json()) == manifest


def test_a_patch_that_does_not_apply_is_no_error_and_leaves_the_base(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", BASE)
    staged = stage(repo, DOES_NOT_APPLY)
    assert staged.manifest["applied"] is False
    assert "patch does not apply" in staged.manifest["apply_error"]
    assert "app.py" in staged.manifest["apply_error"]
    assert contents(staged) == {path: text.encode() for path, text in BASE.items()}


NEW_LINK = "diff --git a/made b/made\nnew file mode 120000\n--- /dev/null\n+++ b/made\n@@ -0,0 +1 @@\n+{}\n"


@pytest.mark.parametrize(
    ("patch", "why"),
    [
        ("--- a/../evil.txt\n+++ b/../evil.txt\n@@ -0,0 +1 @@\n+pwned\n", "escapes the repository"),
        ("--- a/.git/hooks/pre-commit\n+++ b/.git/hooks/pre-commit\n@@ -0,0 +1 @@\n+pwned\n", "into .git"),
        (NEW_LINK.format("/etc") + "diff --git a/made/evil.txt b/made/evil.txt\n", "symlinks"),
    ],
)
def test_a_patch_reaching_outside_is_refused_and_writes_nothing(tmp_path: Path, patch: str, why: str) -> None:
    repo = make_repo(tmp_path / "repo", BASE)
    staged = stage(repo, patch)
    assert staged.manifest["applied"] is False
    assert staged.manifest["apply_error"].startswith("the patch is refused: ")
    assert why in staged.manifest["apply_error"]
    assert not list(tmp_path.rglob("evil.txt")) and not (repo / ".git" / "hooks" / "pre-commit").exists()
    assert contents(staged) == {path: text.encode() for path, text in BASE.items()}


def test_a_patch_through_a_tracked_symlink_writes_inside_the_copy_only(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    repo = make_repo(tmp_path / "repo", BASE)
    (repo / "link").symlink_to(outside)
    git(repo, "add", "link")
    git(repo, "commit", "-q", "-m", "a link out")
    through = "--- /dev/null\n+++ b/link/evil.txt\n@@ -0,0 +1 @@\n+pwned\n"
    staged = stage(repo, through)
    assert list(outside.iterdir()) == []  # the link was never made in the copy: git wrote a new file
    assert staged.manifest["applied"] is True
    assert contents(staged)["link/evil.txt"] == b"pwned\n" and members(staged)["link"].isdir()


def test_gitattributes_change_nothing_the_blobs_are_the_committed_bytes(tmp_path: Path) -> None:
    # git archive would leave out export-ignore files and expand export-subst: the reviewer tests
    # what was committed, whatever the attributes say.
    attributes = "secret.txt export-ignore\nversion.txt export-subst\n*.txt eol=crlf\n"
    repo = make_repo(
        tmp_path / "repo",
        {**BASE, ".gitattributes": attributes, "secret.txt": "kept\n", "version.txt": "$Format:%H$\n"},
    )
    files = contents(stage(repo, CHANGE_APP))
    assert files["secret.txt"] == b"kept\n"
    assert files["version.txt"] == b"$Format:%H$\n"


def test_the_callers_git_environment_cannot_redirect_git(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo(tmp_path / "repo", BASE)
    other = make_repo(tmp_path / "other", {"other.txt": "not the project\n"})
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    monkeypatch.setenv("GIT_WORK_TREE", str(other))
    assert "other.txt" not in contents(stage(repo, CHANGE_APP))


def test_symlinks_never_enter_the_tar(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", BASE)
    (repo / "inside").symlink_to("app.py")
    (repo / "outside").symlink_to("/etc/passwd")
    git(repo, "add", "inside", "outside")
    git(repo, "commit", "-q", "-m", "links")
    staged = stage(repo, CHANGE_APP)
    assert staged.manifest["applied"] is True
    infos = members(staged)
    assert {"inside", "outside"}.isdisjoint(infos) and "app.py" in infos
    assert all(info.isfile() or info.isdir() for info in infos.values())
    assert staged.manifest["skipped"]["symlinks"] == 2


def test_the_tar_is_deterministic(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", BASE)
    first = stage(repo, CHANGE_APP)
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(repo), str(clone))
    for path in clone.rglob("*"):
        if ".git" not in path.parts:
            os.utime(path, (1_000_000, 1_000_000))
    assert stage(clone, CHANGE_APP).tar == first.tar == stage(repo, CHANGE_APP).tar
    infos = list(members(first).values())
    assert [info.name for info in infos] == sorted(info.name for info in infos)
    assert {(info.mtime, info.uid, info.gid, info.uname, info.gname) for info in infos} == {(0, 0, 0, "", "")}
    assert {info.mode for info in infos if info.isdir()} == {0o755}


def test_a_tree_over_the_cap_is_a_conflict(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {**BASE, "big.bin": "x" * 50_000})
    with pytest.raises(Conflict, match=r"tracked tree at HEAD is \d+ bytes; the cap is 40000"):
        stage(repo, CHANGE_APP, max_bytes=40_000)
    small = stage(repo, CHANGE_APP, max_bytes=80_000)
    assert small.manifest["bytes"] <= 80_000
    with pytest.raises(Conflict, match="as a tar; the cap is 50100"):  # the content fits, its tar does not
        stage(repo, CHANGE_APP, max_bytes=50_100)


def test_not_a_git_work_tree_is_a_conflict(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(Conflict, match=r"needs a git work tree with a commit: .* is not in a git work tree"):
        stage(plain, CHANGE_APP)


def test_a_repository_without_a_commit_is_a_conflict(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", BASE, commit=False)
    with pytest.raises(Conflict, match=r"needs a git work tree with a commit: .* has no commit yet"):
        stage(repo, CHANGE_APP)


def test_a_directory_inside_a_work_tree_is_not_a_project_root(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", BASE)
    with pytest.raises(Conflict, match="not at its top"):
        stage(repo / "tests", CHANGE_APP)


def test_a_wrong_hash_or_command_is_refused(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", BASE)
    data = CHANGE_APP.encode()
    common: dict[str, Any] = {"proposal_id": "P-1", "patch_version": 1, "timeout_seconds": 5}
    with pytest.raises(InvalidArgument, match="SHA-256"):
        stage_review_workspace(repo, data, patch_sha256="0" * 64, command=COMMAND, **common)
    digest = hashlib.sha256(data).hexdigest()
    for command in ([], "pytest -q", ["pytest", ""]):
        with pytest.raises(InvalidArgument, match="command"):
            stage_review_workspace(repo, data, patch_sha256=digest, command=command, **common)
    with pytest.raises(InvalidArgument, match="timeout_seconds"):
        stage_review_workspace(
            repo, data, patch_sha256=digest, command=COMMAND, **{**common, "timeout_seconds": 0}
        )


def test_a_repository_around_the_scratch_space_does_not_swallow_the_patch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # git apply inside some repository's subdirectory would skip every path outside it, silently.
    repo = make_repo(tmp_path / "repo", BASE)
    around = make_repo(tmp_path / "around", {"x.txt": "x\n"})
    (around / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(around / "tmp"))
    staged = stage(repo, CHANGE_APP)
    assert staged.manifest["applied"] is True
    assert contents(staged)["app.py"].endswith(b"a + b + 0\n")
