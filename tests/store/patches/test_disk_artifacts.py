"""SQLite's patch artifacts, files under ``.roundtable/patches``: durable before their row, never
overwritten, read without following symlinks, orphans collected.

The disk store is the SQLite backend's, so this module runs on SQLite only (it is not in
tests/store/conftest.py's ``POSTGRES_MODULES``); ``test_patches.py`` holds what both backends share.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from store import ProjectPaths, Store, patch_relative_path
from store.errors import ArtifactMismatch, Conflict, UnsafePath
from tests.store.work_helpers import DIFF, DIFF_V2, new_task

REPO = Path(__file__).resolve().parents[3]


def _rows(store: Store, sql: str) -> list[sqlite3.Row]:
    return store.db.read(lambda conn: conn.execute(sql).fetchall())


def test_version_file_is_written_at_its_canonical_path_read_only(store: Store) -> None:
    task = new_task(store)
    proposal, patch = store.proposals.create(
        task_id=task.id, agent_id="implementer-1", title="t", patch=DIFF, actor="op"
    )
    parts = patch_relative_path(proposal["id"], 1)
    assert parts == (".roundtable", "patches", proposal["id"], "v1.diff")
    path = store.paths.root.joinpath(*parts)
    assert path.read_text() == DIFF
    info = path.stat()
    assert info.st_nlink == 1 and (info.st_mode & 0o777) == 0o444
    assert patch.path == "/".join(parts) and patch.size_bytes == len(DIFF.encode())
    assert store.patches.read_verified(patch) == DIFF.encode()


def test_files_are_never_overwritten(store: Store) -> None:
    task = new_task(store)
    proposal, _ = store.proposals.create(
        task_id=task.id, agent_id="implementer-1", title="t", patch=DIFF, actor="op"
    )
    with pytest.raises(Conflict, match="already exists"):
        store.patches.stage(proposal["id"], 1, b"something else", ["x"])
    assert store.paths.root.joinpath(*patch_relative_path(proposal["id"], 1)).read_text() == DIFF
    # A stray file where the next version would go blocks the attach instead of being replaced.
    stray = store.paths.root.joinpath(*patch_relative_path(proposal["id"], 2))
    stray.write_text("left by a crash")
    with pytest.raises(Conflict, match="roundtable gc"):
        store.proposals.attach_patch(proposal_id=proposal["id"], patch=DIFF_V2, actor="op")
    assert stray.read_text() == "left by a crash"
    assert store.proposals.get(proposal["id"])["current_version"] == 1


def test_killed_between_file_and_row_leaves_an_orphan_that_gc_removes(
    store: Store, project: ProjectPaths
) -> None:
    task = new_task(store)
    script = textwrap.dedent(
        f"""
        import os, signal
        from store import find_project_root, open_store
        store = open_store(find_project_root({str(project.root)!r}))
        def die(*args, **kwargs):
            os.kill(os.getpid(), signal.SIGKILL)
        store.patches.insert_row = die
        store.proposals.create(
            task_id={task.id!r}, agent_id="implementer-1", title="t", patch={DIFF!r}, actor="op"
        )
        """
    )
    child = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, capture_output=True, timeout=60, check=False
    )
    assert child.returncode == -signal.SIGKILL, child.stderr
    orphans = list(project.patches_dir.rglob("*.diff"))
    assert len(orphans) == 1
    # No row names a file that is missing, and no row names the orphan either.
    assert _rows(store, "SELECT * FROM patch_versions") == []
    assert _rows(store, "SELECT * FROM proposals") == []
    assert store.patches.collect_garbage()["kept_recent"] == [str(orphans[0].relative_to(project.root))]
    result = store.patches.collect_garbage(grace_seconds=0)
    assert result["removed"] == [str(orphans[0].relative_to(project.root))]
    assert list(project.patches_dir.iterdir()) == []


def test_gc_keeps_recorded_versions_and_removes_temp_files(store: Store) -> None:
    task = new_task(store)
    proposal, _ = store.proposals.create(
        task_id=task.id, agent_id="implementer-1", title="t", patch=DIFF, actor="op"
    )
    folder = store.paths.patches_dir / proposal["id"]
    (folder / ".rt-tmp-123-abc").write_bytes(b"half written")
    (folder / "v7.diff").write_bytes(b"orphan")
    (folder / "README").write_bytes(b"not ours")
    removed = store.patches.collect_garbage(grace_seconds=0)["removed"]
    assert sorted(Path(p).name for p in removed) == [".rt-tmp-123-abc", "v7.diff"]
    assert sorted(p.name for p in folder.iterdir()) == ["README", "v1.diff"]


def test_tampered_or_symlinked_artifacts_are_refused(store: Store, tmp_path: Path) -> None:
    task = new_task(store)
    proposal, patch = store.proposals.create(
        task_id=task.id, agent_id="implementer-1", title="t", patch=DIFF, actor="op"
    )
    path = store.paths.root.joinpath(*patch_relative_path(proposal["id"], 1))
    os.chmod(path, 0o644)
    path.write_text(DIFF.replace("TWO", "TOO"))
    with pytest.raises(ArtifactMismatch):
        store.patches.read_verified(patch)
    path.unlink()
    outside = tmp_path / "outside.diff"
    outside.write_text(DIFF)
    path.symlink_to(outside)
    with pytest.raises(UnsafePath):
        store.patches.read_verified(patch)
    # A symlinked proposal directory is refused by the writer too.
    folder = store.paths.patches_dir / proposal["id"]
    path.unlink()
    folder.rmdir()
    (tmp_path / "elsewhere").mkdir()
    folder.symlink_to(tmp_path / "elsewhere")
    with pytest.raises(UnsafePath):
        store.patches.stage(proposal["id"], 2, b"x", ["x"])
    assert list((tmp_path / "elsewhere").iterdir()) == []
