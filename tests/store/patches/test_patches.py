"""Patch versions behind the one artifact interface, the same on both backends.

Each test runs on SQLite (files under ``.roundtable/patches``) and PostgreSQL (``patch_blobs``
rows) through tests/store/conftest.py; what only one backend has is in ``test_disk_artifacts.py``
and ``test_db_artifacts.py``.
"""

from __future__ import annotations

import sqlite3
import threading

import pytest

from store import Store
from store.errors import ArtifactMismatch, Conflict, InvalidArgument, UnsafePath
from store.patches import open_patch_artifacts
from store.patches._artifacts import get_version
from tests.helpers import project_snapshot
from tests.store.patches.artifact_helpers import stored_blobs, stored_files, tamper
from tests.store.work_helpers import DIFF, DIFF_V2, new_task, seed_files


def _rows(store: Store, sql: str) -> list[sqlite3.Row]:
    return store.db.read(lambda conn: conn.execute(sql).fetchall())


def _create(store: Store, patch: str = DIFF) -> str:
    task = new_task(store)
    proposal, _ = store.proposals.create(
        task_id=task.id, agent_id="implementer-1", title="t", patch=patch, actor="op"
    )
    return str(proposal["id"])


def _big_diff(lines: int) -> str:
    body = "".join(f"+line {n:06d} of a long new file\n" for n in range(lines))
    head = "diff --git a/big.txt b/big.txt\nnew file mode 100644\n--- /dev/null\n+++ b/big.txt\n"
    return f"{head}@@ -0,0 +1,{lines} @@\n{body}"


def test_a_version_is_kept_where_its_backend_keeps_it_and_read_back_whole(store: Store) -> None:
    pid = _create(store)
    record, data = store.proposals.patch(pid)
    assert data == DIFF.encode() and record.size_bytes == len(data)
    assert store.patches.read_verified(record) == data
    if store.db.backend == "postgresql":
        assert store.patches.backend == "postgresql" and record.path == f"db:patch_blobs/{pid}/v1"
        assert stored_files(store) == [] and stored_blobs(store) == [(pid, 1, len(data))]
    else:
        assert store.patches.backend == "sqlite" and record.path == f".roundtable/patches/{pid}/v1.diff"
        assert stored_files(store) == [f"{pid}/v1.diff"]


def test_a_failure_between_staging_and_the_row_leaves_nothing(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    task = new_task(store)
    before = project_snapshot(store.paths)

    def boom(*args: object, **kwargs: object) -> None:
        raise RuntimeError("injected failure after the bytes were staged")

    monkeypatch.setattr(store.patches, "insert_row", boom)
    with pytest.raises(RuntimeError, match="injected"):
        store.proposals.create(task_id=task.id, agent_id="implementer-1", title="t", patch=DIFF, actor="op")
    assert project_snapshot(store.paths) == before
    assert _rows(store, "SELECT * FROM patch_versions") == [] and stored_files(store) == []


def test_tampered_bytes_are_refused_on_every_read(store: Store) -> None:
    seed_files(store.paths.root)
    pid = _create(store)
    record, original = store.proposals.patch(pid)
    tamper(store, pid, 1, original.replace(b"TWO", b"TOO"))
    with pytest.raises(ArtifactMismatch, match="no longer matches the SHA-256"):
        store.patches.read_verified(record)
    with pytest.raises(ArtifactMismatch):
        store.proposals.patch(pid)
    checks = store.workspace.validate(proposal_id=pid).to_dict()["checks"]
    assert checks[0]["name"] == "artifact_integrity" and checks[0]["ok"] is False
    assert all(c.get("skipped") for c in checks[1:])
    # Put back, it reads again: the check runs on each read, nothing is remembered.
    tamper(store, pid, 1, original)
    assert store.proposals.patch(pid)[1] == original
    assert store.workspace.validate(proposal_id=pid).ok


def test_version_rows_are_immutable(store: Store) -> None:
    pid = _create(store)
    with pytest.raises(Conflict, match="immutable"):
        store.db.write(lambda conn: conn.execute("UPDATE patch_versions SET sha256 = 'x'"))
    with pytest.raises(Conflict, match="immutable"):
        store.db.write(lambda conn: conn.execute("DELETE FROM patch_versions"))
    assert store.db.read(lambda conn: get_version(conn, pid, 1)).version == 1
    assert store.proposals.patch(pid)[1] == DIFF.encode()


def test_a_recorded_version_is_never_replaced(store: Store) -> None:
    pid = _create(store)
    if store.db.backend == "postgresql":  # staged in memory; the row's key refuses it
        staged = store.patches.stage(pid, 1, b"something else", ["hello.txt"])
        with pytest.raises(Conflict):
            store.db.write(lambda conn: store.patches.insert_row(conn, staged, actor="op"))
    else:  # SQLite refuses the file itself
        with pytest.raises(Conflict, match="already exists"):
            store.patches.stage(pid, 1, b"something else", ["hello.txt"])
    assert store.proposals.patch(pid)[1] == DIFF.encode()


def test_concurrent_attaches_make_one_version_and_leave_no_orphan(store: Store) -> None:
    pid = _create(store)
    outcomes: list[str] = []
    barrier = threading.Barrier(4)

    def attach() -> None:
        barrier.wait()
        try:
            _, version, _ = store.proposals.attach_patch(proposal_id=pid, patch=DIFF_V2, actor="op")
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
    if store.db.backend == "postgresql":
        assert [v for _, v, _ in stored_blobs(store)] == versions and stored_files(store) == []
    else:
        assert stored_files(store) == [f"{pid}/v{v}.diff" for v in versions]
    assert store.proposals.patch(pid, 2)[1] == DIFF_V2.encode()


def test_size_limits_are_the_same_on_both_backends(store: Store) -> None:
    limit = store.config.policy.max_patch_bytes
    line = len("+line 000000 of a long new file\n")
    near = _big_diff((limit - 200) // line)
    assert limit - 300 < len(near.encode()) <= limit
    pid = _create(store, near)
    record, data = store.proposals.patch(pid)
    assert data == near.encode()
    before = project_snapshot(store.paths)
    with pytest.raises(InvalidArgument, match=r"policy\.max_patch_bytes"):
        store.proposals.attach_patch(proposal_id=pid, patch=_big_diff(limit // line + 1), actor="op")
    assert project_snapshot(store.paths) == before
    # A reader with a lower limit refuses the stored version before handing out its bytes.
    small = open_patch_artifacts(store.db, store.paths, store.files, max_bytes=len(data) - 1)
    with pytest.raises(UnsafePath, match=f"{len(data)} bytes, over the {len(data) - 1}-byte limit"):
        small.read_verified(record)
    assert (
        open_patch_artifacts(store.db, store.paths, store.files, max_bytes=len(data)).read_verified(record)
        == data
    )
