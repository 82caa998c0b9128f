"""Immutable patch artifacts: durable before their row, never overwritten, orphans collected."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from store import ProjectPaths, Store, patch_relative_path
from store.errors import ArtifactMismatch, Conflict, UnsafePath
from store.patches._artifacts import get_version
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


def test_failure_between_file_and_row_removes_the_file_and_leaves_no_row(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    task = new_task(store)

    def boom(*args: object, **kwargs: object) -> None:
        raise RuntimeError("injected failure after the file was written")

    monkeypatch.setattr(store.patches, "insert_row", boom)
    with pytest.raises(RuntimeError, match="injected"):
        store.proposals.create(task_id=task.id, agent_id="implementer-1", title="t", patch=DIFF, actor="op")
    assert _rows(store, "SELECT * FROM proposals") == []
    assert _rows(store, "SELECT * FROM patch_versions") == []
    assert list(store.paths.patches_dir.iterdir()) == []


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


def test_version_rows_are_immutable(store: Store) -> None:
    task = new_task(store)
    proposal, _ = store.proposals.create(
        task_id=task.id, agent_id="implementer-1", title="t", patch=DIFF, actor="op"
    )
    with pytest.raises(Conflict, match="immutable"):
        store.db.write(lambda conn: conn.execute("UPDATE patch_versions SET sha256 = 'x'"))
    with pytest.raises(Conflict, match="immutable"):
        store.db.write(lambda conn: conn.execute("DELETE FROM patch_versions"))
    assert store.db.read(lambda conn: get_version(conn, proposal["id"], 1)).version == 1


def test_concurrent_attaches_make_one_version_and_leave_no_orphan(store: Store) -> None:
    task = new_task(store)
    proposal, _ = store.proposals.create(
        task_id=task.id, agent_id="implementer-1", title="t", patch=DIFF, actor="op"
    )
    outcomes: list[str] = []
    barrier = threading.Barrier(4)

    def attach() -> None:
        barrier.wait()
        try:
            _, version, _ = store.proposals.attach_patch(
                proposal_id=proposal["id"], patch=DIFF_V2, actor="op"
            )
            # After one of them made v2, the same bytes again are a no-op (no version), not an error.
            outcomes.append("unchanged" if version.unchanged else "ok")
        except Conflict:
            outcomes.append("conflict")

    threads = [threading.Thread(target=attach) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert len(outcomes) == 4 and set(outcomes) <= {"ok", "unchanged", "conflict"} and "ok" in outcomes
    versions = [row["version"] for row in _rows(store, "SELECT version FROM patch_versions ORDER BY version")]
    assert versions == list(range(1, len(versions) + 1)) and len(versions) == 1 + outcomes.count("ok")
    on_disk = sorted(p.name for p in (store.paths.patches_dir / proposal["id"]).iterdir())
    assert on_disk == [f"v{v}.diff" for v in versions]
