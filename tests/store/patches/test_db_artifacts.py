"""PostgreSQL's patch artifacts, ``patch_blobs`` rows: shared by every host, immutable, checked.

Every test here runs against the real server (``pg_url``, tests/store/conftest.py) and only there;
``test_patches.py`` holds what both backends share.
"""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
import threading
import uuid
from collections.abc import Iterator
from dataclasses import replace
from functools import partial
from pathlib import Path

import psycopg
import pytest

from store import ProjectPaths, Store, init_project, open_store
from store.db import ENV_STORE_URL
from store.errors import ArtifactMismatch, Conflict
from store.patches import DatabasePatchArtifacts
from tests.helpers import insert_proposal
from tests.store.patches.artifact_helpers import stored_blobs, stored_files, tamper
from tests.store.work_helpers import DIFF, DIFF_V2, new_task, seed_files


def _checkout(root: Path, pg_url: str, schema: str) -> ProjectPaths:
    """A project directory whose store is ``schema`` on the server, named in its own config.toml."""
    paths, _ = init_project(root)
    config = paths.config_file.read_text(encoding="utf-8")
    paths.config_file.write_text(
        config.replace('url = ""', f'url = "{pg_url}"', 1).replace('schema = ""', f'schema = "{schema}"', 1),
        encoding="utf-8",
    )
    seed_files(paths.root)
    return paths


def _run(sql: str, conn: sqlite3.Connection) -> None:
    conn.execute(sql)


@pytest.fixture
def hosts(tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Store, Store]]:
    """Two checkouts of one project, as on two hosts: different directories, one ``[store] schema``."""
    monkeypatch.delenv(ENV_STORE_URL, raising=False)  # each finds the server in its own config.toml
    schema = f"rt_hosts_{uuid.uuid4().hex[:12]}"
    first = open_store(_checkout(tmp_path / "host-a" / "proj", pg_url, schema))
    second = open_store(_checkout(tmp_path / "host-b" / "checkout", pg_url, schema))
    try:
        yield first, second
    finally:
        first.close()
        second.close()
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@pytest.fixture
def pg_store(tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Store]:
    """One project on the server (its own schema)."""
    monkeypatch.delenv(ENV_STORE_URL, raising=False)
    schema = f"rt_blobs_{uuid.uuid4().hex[:12]}"
    opened = open_store(_checkout(tmp_path / "proj", pg_url, schema))
    try:
        yield opened
    finally:
        opened.close()
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def test_another_host_reads_every_version_without_any_patch_file(hosts: tuple[Store, Store]) -> None:
    first, second = hosts
    assert isinstance(first.patches, DatabasePatchArtifacts) and first.db.backend == "postgresql"
    assert first.paths.root != second.paths.root
    shutil.rmtree(second.paths.patches_dir)  # the second host has no patches directory at all
    task = new_task(first)
    proposal, _ = first.proposals.create(
        task_id=task.id, agent_id="implementer-1", title="t", patch=DIFF, actor="op"
    )
    pid = str(proposal["id"])
    first.proposals.attach_patch(proposal_id=pid, patch=DIFF_V2, actor="op")
    assert second.proposals.patch(pid, 1)[1] == DIFF.encode()
    record, data = second.proposals.patch(pid)
    assert (record.version, data) == (2, DIFF_V2.encode())
    assert second.workspace.validate(proposal_id=pid).ok  # the checks read the blob, then this checkout
    # And back: a version the second host attaches is read by the first.
    second.proposals.attach_patch(proposal_id=pid, patch=DIFF, actor="op")
    assert first.proposals.patch(pid)[1] == DIFF.encode()
    assert stored_files(first) == [] and not second.paths.patches_dir.exists()
    assert [v for _, v, _ in stored_blobs(first)] == [1, 2, 3]


def test_blobs_are_immutable_and_consistent_with_themselves(pg_store: Store) -> None:
    task = new_task(pg_store)
    proposal, _ = pg_store.proposals.create(
        task_id=task.id, agent_id="implementer-1", title="t", patch=DIFF, actor="op"
    )
    pid = str(proposal["id"])
    for statement in (
        "UPDATE patch_blobs SET content = 'x'::bytea",
        "DELETE FROM patch_blobs",
        "TRUNCATE patch_blobs",
    ):
        with pytest.raises(Conflict, match="patch versions are immutable"):
            pg_store.db.write(partial(_run, statement))
    # A blob that disagrees with its own hash or size is refused by the table itself.
    _, other = insert_proposal(pg_store)

    def bad_blob(conn: sqlite3.Connection, sha: str, size: int) -> None:
        conn.execute(
            "INSERT INTO patch_versions (proposal_id, version, sha256, size_bytes, files, path, created_by,"
            " created_at) VALUES (?, 1, ?, ?, '[]', 'db:x', 'op', 'now')",
            (other, sha, size),
        )
        conn.execute(
            "INSERT INTO patch_blobs (proposal_id, version, sha256, size_bytes, content)"
            " VALUES (?, 1, ?, ?, ?)",
            (other, sha, size, b"abc"),
        )

    with pytest.raises(Conflict):
        pg_store.db.write(lambda conn: bad_blob(conn, "0" * 64, 3))
    with pytest.raises(Conflict):
        pg_store.db.write(lambda conn: bad_blob(conn, hashlib.sha256(b"abc").hexdigest(), 4))
    assert pg_store.proposals.patch(pid)[1] == DIFF.encode()
    assert [p for p, _, _ in stored_blobs(pg_store)] == [pid]


def test_content_changed_behind_every_check_is_still_caught_on_read(pg_store: Store) -> None:
    task = new_task(pg_store)
    proposal, record = pg_store.proposals.create(
        task_id=task.id, agent_id="implementer-1", title="t", patch=DIFF, actor="op"
    )
    pid = str(proposal["id"])
    tamper(pg_store, pid, 1, DIFF.replace("TWO", "TOO").encode(), own_hash=False)
    with pytest.raises(ArtifactMismatch, match=f"db:patch_blobs/{pid}/v1 no longer matches"):
        pg_store.patches.read_verified(record)


def test_a_version_recorded_before_the_blobs_reads_its_file_and_gc_leaves_files_alone(
    pg_store: Store,
) -> None:
    """A row from before migration 0010 names its file; it is read from there, still checked."""
    assert isinstance(pg_store.patches, DatabasePatchArtifacts)
    _, pid = insert_proposal(pg_store)
    disk = pg_store.patches.legacy
    staged = disk.stage(pid, 1, DIFF.encode(), ["hello.txt"])
    record = pg_store.db.write(lambda conn: disk.insert_row(conn, staged, actor="op"))
    assert record.path == f".roundtable/patches/{pid}/v1.diff" and stored_blobs(pg_store) == []
    assert pg_store.patches.read_verified(record) == DIFF.encode()
    stray = pg_store.paths.patches_dir / pid / "v9.diff"
    stray.write_text("not named by any row of this store")
    assert pg_store.patches.collect_garbage(grace_seconds=0) == {"removed": [], "kept_recent": []}
    assert stray.exists()
    legacy_file = pg_store.paths.root / record.path
    legacy_file.chmod(0o644)
    legacy_file.write_bytes(b"changed")
    with pytest.raises(ArtifactMismatch):
        pg_store.patches.read_verified(record)
    # A row that names a blob which is not there is a mismatch, never a read of some file.
    with pytest.raises(ArtifactMismatch, match="missing"):
        pg_store.patches.read_verified(replace(record, path=f"db:patch_blobs/{pid}/v1"))


def test_hosts_attaching_at_once_make_contiguous_versions_each_with_its_own_bytes(
    hosts: tuple[Store, Store],
) -> None:
    first, second = hosts
    task = new_task(first)
    proposal, _ = first.proposals.create(
        task_id=task.id, agent_id="implementer-1", title="t", patch=DIFF, actor="op"
    )
    pid = str(proposal["id"])
    sent: dict[int, bytes] = {1: DIFF.encode()}
    lock = threading.Lock()
    refused: list[str] = []

    def attach(store: Store, text: str, barrier: threading.Barrier) -> None:
        barrier.wait()
        try:
            _, version, _ = store.proposals.attach_patch(proposal_id=pid, patch=text, actor="op")
        except Conflict:
            with lock:
                refused.append(text)
            return
        with lock:
            sent[version.version] = text.encode()

    for round_n in range(6):
        barrier = threading.Barrier(2)
        texts = [DIFF_V2.replace("four", f"{host}-{round_n}") for host in ("a", "b")]
        threads = [
            threading.Thread(target=attach, args=(store, text, barrier))
            for store, text in zip((first, second), texts, strict=True)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
    versions = sorted(sent)
    assert versions == list(range(1, len(versions) + 1)) and len(versions) + len(refused) == 13
    assert [v for _, v, _ in stored_blobs(second)] == versions
    for number, data in sent.items():  # each version holds the bytes its attacher sent, on both hosts
        assert first.proposals.patch(pid, number)[1] == data == second.proposals.patch(pid, number)[1]
