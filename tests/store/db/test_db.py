"""Connection discipline, migrations and project layout on real files."""

from __future__ import annotations

import multiprocessing
import sqlite3
from multiprocessing.synchronize import Barrier
from pathlib import Path

import pytest

from store import NotInitialized, ProjectPaths, find_project_root, init_project, open_store
from store.db._connection import Database
from store.db._migrations import apply_migrations, load_migrations
from store.errors import Conflict


def test_init_creates_layout_and_is_idempotent(tmp_path: Path) -> None:
    paths, created = init_project(tmp_path)
    assert created
    assert paths.config_file.is_file() and paths.patches_dir.is_dir()
    open_store(paths).close()
    assert paths.database.is_file()
    config_before = paths.config_file.read_text()
    paths.config_file.write_text(config_before + "\n# my edit\n")
    _, created_again = init_project(tmp_path)
    assert not created_again
    assert paths.config_file.read_text().endswith("# my edit\n")  # never destroys data


def test_default_config_has_every_contract_key(project: ProjectPaths) -> None:
    text = project.config_file.read_text()
    for key in (
        "[roles.memory_oracle]",
        "image = ",
        'provider = "judge"',  # the judging provider is the default; "lexical" stays selectable
        "timeout_seconds = 300",
        'memory_limit = "512m"',
        "cpus = 1.0",
        "pids_limit = 128",
        "[providers.openai]",
        "base_url = ",
        "model = ",
        'api_key_env = "OPENAI_API_KEY"',
        "max_turns = 12",
        "max_tokens = 20000",
        "[policy]",
        "required_approvals = 2",
        "[agents]",
        '"memory-oracle-1" = "MemoryOracle"',
    ):
        assert key in text, key
    config = project.load_config()
    assert config.roles.memory_oracle.image == "roundtable-role:0.1.0"
    assert config.agents["reviewer-1"] == "Reviewer"


def test_bad_config_is_a_clear_error(project: ProjectPaths) -> None:
    project.config_file.write_text("[policy]\nrequired_aprovals = 3\n")
    from store import InvalidArgument

    with pytest.raises(InvalidArgument, match="required_aprovals"):
        project.load_config()
    # tomllib raises RecursionError (not TOMLDecodeError) on deep nesting; a bad byte, UnicodeDecodeError.
    for raw, why in ((b"a = " + b"[" * 100_000, "nested too deeply"), (b"a = '\xff'\n", "not UTF-8")):
        project.config_file.write_bytes(raw)
        with pytest.raises(InvalidArgument, match=why):
            project.load_config()


def test_root_discovery_walks_up_like_git(project: ProjectPaths) -> None:
    nested = project.root / "a" / "b"
    nested.mkdir(parents=True)
    assert find_project_root(start=nested).root == project.root
    assert find_project_root(project.root).root == project.root


def test_root_discovery_fails_with_not_initialized(tmp_path: Path) -> None:
    with pytest.raises(NotInitialized):
        find_project_root(tmp_path)
    with pytest.raises(NotInitialized):
        find_project_root(start=tmp_path)


def test_connection_pragmas(project: ProjectPaths) -> None:
    db = Database(project.database)
    conn = db.connection()
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert conn.execute("PRAGMA busy_timeout").fetchone()[0] > 0
    assert conn.execute("PRAGMA mmap_size").fetchone()[0] == 1 << 30  # reads through a memory map
    db.close()


def test_write_rolls_back_on_error(project: ProjectPaths) -> None:
    store = open_store(project)

    def failing(conn: sqlite3.Connection) -> None:
        conn.execute("INSERT INTO events (type, created_at, actor) VALUES ('x', 'now', 'a')")
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        store.db.write(failing)
    assert store.db.read(lambda c: c.execute("SELECT count(*) FROM events").fetchone()[0]) == 0
    store.close()


def test_migrations_are_recorded_once(project: ProjectPaths) -> None:
    db = Database(project.database)
    assert apply_migrations(db.connection()) == []
    names = [r[0] for r in db.connection().execute("SELECT name FROM schema_migrations ORDER BY name")]
    assert names == [m.name for m in load_migrations()]
    db.close()


def _migrate(path: str, barrier: Barrier) -> None:
    db = Database(Path(path))
    barrier.wait()
    apply_migrations(db.connection())
    db.close()


def test_two_processes_migrating_at_once_do_not_both_migrate(tmp_path: Path) -> None:
    path = tmp_path / "race.db"
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(4)
    procs = [ctx.Process(target=_migrate, args=(str(path), barrier)) for _ in range(4)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(60)
        assert proc.exitcode == 0
    conn = sqlite3.connect(path)
    rows = conn.execute("SELECT name, count(*) FROM schema_migrations GROUP BY name").fetchall()
    assert rows and all(count == 1 for _, count in rows)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()


def test_a_failed_commit_releases_the_write_lock(tmp_path: Path) -> None:
    # A deferred foreign key fails at COMMIT, after the body ran: the transaction must still end,
    # or every later write on this thread, and every other writer, would find the database locked.
    db = Database(tmp_path / "x.db", busy_timeout_ms=200)
    db.write(lambda c: c.execute("CREATE TABLE a (id INTEGER PRIMARY KEY)"))
    db.write(
        lambda c: c.execute(
            "CREATE TABLE b (id INTEGER PRIMARY KEY,"
            " a INTEGER REFERENCES a(id) DEFERRABLE INITIALLY DEFERRED)"
        )
    )
    with pytest.raises(Conflict):
        db.write(lambda c: c.execute("INSERT INTO b VALUES (1, 99)"))
    assert not db.connection().in_transaction
    db.write(lambda c: c.execute("INSERT INTO a VALUES (1)"))  # this thread can write again
    other = sqlite3.connect(tmp_path / "x.db", timeout=0.2)
    try:
        other.execute("BEGIN IMMEDIATE")  # and so can another connection
        other.execute("ROLLBACK")
    finally:
        other.close()
