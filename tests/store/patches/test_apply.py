"""patch.validate and patch.apply against real project files (and a real git work tree)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from store import Store, list_events
from store.errors import Conflict
from store.patches._worktree import FileState, RepoFiles, read_rollback_artifact
from tests.helpers import project_snapshot
from tests.store.patches.artifact_helpers import tamper
from tests.store.work_helpers import DIFF, new_task, seed_files

REPO = Path(__file__).resolve().parents[3]

MULTI = """\
diff --git a/hello.txt b/hello.txt
--- a/hello.txt
+++ b/hello.txt
@@ -1,3 +1,3 @@
 one
-two
+TWO
 three
diff --git a/pkg/new.py b/pkg/new.py
new file mode 100755
--- /dev/null
+++ b/pkg/new.py
@@ -0,0 +1 @@
+print("new")
diff --git a/zzz.txt b/zzz.txt
deleted file mode 100644
--- a/zzz.txt
+++ /dev/null
@@ -1 +0,0 @@
-bye
"""


def _accepted(store: Store, patch: str = MULTI) -> str:
    task = new_task(store)
    proposal, _ = store.proposals.create(
        task_id=task.id, agent_id="implementer-1", title="t", patch=patch, actor="op"
    )
    pid = str(proposal["id"])
    store.reviews.request_review(proposal_id=pid, actor="op")
    for agent in ("reviewer-1", "reviewer-2"):
        store.reviews.cast(proposal_id=pid, agent_id=agent, vote="approve", reason_md="ok", actor="op")
    return pid


@pytest.fixture
def seeded(store: Store) -> Store:
    seed_files(store.paths.root)
    (store.paths.root / "zzz.txt").write_text("bye\n")
    return store


def _checks(result: dict[str, object]) -> dict[str, bool]:
    return {c["name"]: c["ok"] for c in result["checks"]}  # type: ignore[attr-defined]


def test_validate_reports_each_check_and_changes_nothing(seeded: Store) -> None:
    pid = _accepted(seeded)
    before = project_snapshot(seeded.paths)
    result = seeded.workspace.validate(proposal_id=pid).to_dict()
    assert result["ok"] is True
    assert [c["name"] for c in result["checks"]] == [
        "artifact_integrity", "parse", "paths_inside_repo", "applies_cleanly", "git_apply_check",
    ]  # fmt: skip
    assert result["checks"][-1]["skipped"] is True  # not a git work tree
    assert project_snapshot(seeded.paths) == before
    assert (seeded.paths.root / "hello.txt").read_text() == "one\ntwo\nthree\n"
    (seeded.paths.root / "hello.txt").write_text("one\nchanged\nthree\n")
    failed = seeded.workspace.validate(proposal_id=pid).to_dict()
    assert failed["ok"] is False and _checks(failed)["applies_cleanly"] is False


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_validate_uses_git_apply_check_in_a_git_work_tree(seeded: Store) -> None:
    root = seeded.paths.root
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@x", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@x"}  # fmt: skip
    for argv in (
        ["git", "init", "-q"],
        ["git", "add", "hello.txt", "zzz.txt"],
        ["git", "commit", "-qm", "seed"],
    ):
        subprocess.run(argv, cwd=root, check=True, env=env, capture_output=True)
    pid = _accepted(seeded)
    result = seeded.workspace.validate(proposal_id=pid).to_dict()
    git = next(c for c in result["checks"] if c["name"] == "git_apply_check")
    assert git == {"name": "git_apply_check", "ok": True}
    (root / "zzz.txt").write_text("something else\n")
    result = seeded.workspace.validate(proposal_id=pid).to_dict()
    assert _checks(result)["git_apply_check"] is False and _checks(result)["applies_cleanly"] is False


def test_apply_requires_consensus(seeded: Store) -> None:
    task = new_task(seeded)
    proposal, _ = seeded.proposals.create(
        task_id=task.id, agent_id="implementer-1", title="t", patch=MULTI, actor="op"
    )
    before = project_snapshot(seeded.paths)
    with pytest.raises(Conflict, match="consensus"):
        seeded.workspace.apply(proposal_id=proposal["id"], actor="op")
    assert project_snapshot(seeded.paths) == before
    assert (seeded.paths.root / "hello.txt").read_text() == "one\ntwo\nthree\n"


def test_apply_writes_rollback_then_files_then_transaction(seeded: Store) -> None:
    root = seeded.paths.root
    pid = _accepted(seeded)
    answer = seeded.workspace.apply(proposal_id=pid, actor="op")
    assert (root / "hello.txt").read_text() == "one\nTWO\nthree\n"
    assert (root / "pkg/new.py").read_text() == 'print("new")\n' and os.access(root / "pkg/new.py", os.X_OK)
    assert not (root / "zzz.txt").exists()
    txn = answer["transaction"]
    assert txn["status"] == "applied" and txn["files"] == ["hello.txt", "pkg/new.py", "zzz.txt"]
    assert txn["before_hash"] != txn["after_hash"] and len(txn["after_hash"]) == 64
    assert answer["proposal"]["status"] == "applied"
    pre = read_rollback_artifact(root, txn["id"])
    assert pre["hello.txt"].content == b"one\ntwo\nthree\n" and pre["pkg/new.py"].content is None
    assert pre["zzz.txt"].content == b"bye\n"
    types = [e.type for e in seeded.db.read(lambda conn: list_events(conn, proposal_id=pid))]
    assert types[-2:] == ["proposal.apply_started", "proposal.applied"]
    with pytest.raises(Conflict, match="already applied"):
        seeded.workspace.apply(proposal_id=pid, actor="op")


class _FailingFiles(RepoFiles):
    """Fails on the second file write of an apply (fault injection)."""

    writes = 0

    def write(self, path: str, state: FileState) -> None:
        self.writes += 1
        if self.writes == 2:
            raise OSError("disk full (injected)")
        super().write(path, state)


def test_failure_part_way_restores_the_files(seeded: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    root = seeded.paths.root
    pid = _accepted(seeded)
    monkeypatch.setattr(seeded.workspace, "files_class", _FailingFiles)
    with pytest.raises(Conflict, match="files were restored"):
        seeded.workspace.apply(proposal_id=pid, actor="op")
    assert (root / "hello.txt").read_text() == "one\ntwo\nthree\n"
    assert (root / "zzz.txt").read_text() == "bye\n"
    assert not (root / "pkg").exists()
    (txn,) = seeded.workspace.transactions(pid)
    assert txn["status"] == "rolled_back" and "disk full" in txn["error"]
    events = seeded.db.read(lambda conn: list_events(conn, proposal_id=pid))
    assert events[-1].type == "proposal.apply_failed" and events[-1].payload["restored"] is True
    assert seeded.proposals.get(pid)["status"] == "accepted"
    monkeypatch.setattr(seeded.workspace, "files_class", RepoFiles)
    assert seeded.workspace.apply(proposal_id=pid, actor="op")["transaction"]["status"] == "applied"


def test_symlinked_directories_and_tampered_artifacts_fail_validation(seeded: Store, tmp_path: Path) -> None:
    root = seeded.paths.root
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "hello.txt").write_text("one\ntwo\nthree\n")
    (root / "linked").symlink_to(outside)
    pid = _accepted(seeded, DIFF.replace("hello.txt", "linked/hello.txt"))
    result = seeded.workspace.validate(proposal_id=pid).to_dict()
    assert _checks(result)["paths_inside_repo"] is False and result["ok"] is False
    with pytest.raises(Conflict, match="does not validate"):
        seeded.workspace.apply(proposal_id=pid, actor="op")
    assert (outside / "hello.txt").read_text() == "one\ntwo\nthree\n"

    other = _accepted(seeded, DIFF)
    tamper(seeded, other, 1, DIFF.replace("TWO", "TOO").encode())
    result = seeded.workspace.validate(proposal_id=other).to_dict()
    assert result["checks"][0] == {
        "name": "artifact_integrity",
        "ok": False,
        "detail": json.loads(json.dumps(result["checks"][0]["detail"])),
    }
    assert all(c.get("skipped") for c in result["checks"][1:])


def test_gc_rolls_back_an_apply_killed_part_way(seeded: Store) -> None:
    root = seeded.paths.root
    pid = _accepted(seeded)
    script = textwrap.dedent(
        f"""
        import os, signal
        from store import find_project_root, open_store
        from store.patches._worktree import RepoFiles

        class Dying(RepoFiles):
            writes = 0
            def write(self, path, state):
                super().write(path, state)
                self.writes += 1
                if self.writes == 2:
                    os.kill(os.getpid(), signal.SIGKILL)

        store = open_store(find_project_root({str(root)!r}))
        store.workspace.files_class = Dying
        store.workspace.apply(proposal_id={pid!r}, actor="op")
        """
    )
    child = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, capture_output=True, timeout=60, check=False
    )
    assert child.returncode == -signal.SIGKILL, child.stderr
    (txn,) = seeded.workspace.transactions(pid)
    assert txn["status"] == "applying"
    assert (root / "hello.txt").read_text() == "one\nTWO\nthree\n"  # half applied
    assert seeded.workspace.recover_interrupted(grace_seconds=3600, actor="gc") == []  # too recent
    recovered = seeded.workspace.recover_interrupted(grace_seconds=0, actor="gc")
    assert recovered == [{"transaction_id": txn["id"], "proposal_id": pid, "restored": True}]
    assert (root / "hello.txt").read_text() == "one\ntwo\nthree\n"
    assert (root / "zzz.txt").read_text() == "bye\n" and not (root / "pkg" / "new.py").exists()
    assert seeded.workspace.transactions(pid)[0]["status"] == "rolled_back"
    assert seeded.workspace.apply(proposal_id=pid, actor="op")["transaction"]["status"] == "applied"
