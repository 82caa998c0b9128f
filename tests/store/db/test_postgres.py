"""The PostgreSQL store against a real server: selection, refusals, isolation, locking, secrecy."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from store import ProjectPaths, Store, init_project, open_store
from store.db import ENV_STORE_URL, parse_store_url
from store.db._migrations import load_migrations
from store.db._postgres import PostgresDatabase, default_schema, pg_migration_names
from store.errors import Conflict, InternalError, InvalidArgument, StoreBusy, StoreUnavailable
from store.events import _log as log_module
from tests.helpers import insert_proposal, project_snapshot
from tests.store.conftest import POSTGRES_MODULES, REPO_ROOT, SQLITE_ONLY
from tests.store.memory.test_memory_search_property import _ENTRY, _model, _queries


def _swap_password(url: str, password: str) -> str:
    parsed = parse_store_url(url, environ={})
    assert parsed is not None and parsed.password
    return url.replace(f":{parsed.password}@", f":{password}@")


def _password(url: str) -> str:
    parsed = parse_store_url(url, environ={})
    assert parsed is not None and parsed.password
    return parsed.password


def _schemas(url: str) -> set[str]:
    with psycopg.connect(url) as conn:
        return {str(r[0]) for r in conn.execute("SELECT nspname FROM pg_namespace")}


def _drop(url: str, schema: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@pytest.fixture
def pg_project(tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[ProjectPaths]:
    """An initialised project whose store is its own schema on the test server (not yet opened)."""
    monkeypatch.setenv(ENV_STORE_URL, pg_url)
    paths, _ = init_project(tmp_path / "proj")
    yield paths
    _drop(pg_url, default_schema(paths.root))


@pytest.fixture
def pg_store(pg_project: ProjectPaths) -> Iterator[Store]:
    """The open store of :func:`pg_project`."""
    opened = open_store(pg_project)
    yield opened
    opened.close()


# -- selection and URLs ----------------------------------------------------------------------------


def test_the_environment_wins_over_the_config_file_and_empty_means_sqlite() -> None:
    assert parse_store_url("", environ={}) is None
    assert parse_store_url("sqlite", environ={}) is None
    got = parse_store_url("sqlite", environ={ENV_STORE_URL: "postgresql://u:pw@db.example:6543/rt"})
    assert got is not None and (got.host, got.port, got.database, got.user) == ("db.example", 6543, "rt", "u")
    from_file = parse_store_url("postgres://h/d", environ={ENV_STORE_URL: "  "})
    assert from_file is not None and (from_file.host, from_file.port, from_file.database) == ("h", 5432, "d")
    assert "pw" not in repr(got)


@pytest.mark.parametrize(
    "url",
    [
        "mysql://u:s3cret-pw@h/d",
        "postgresql://u:s3cret-pw@/d",
        "postgresql://u:s3cret-pw@h:99999/d",
        "postgresql://u:s3cret-pw@h:port/d",
        "postgresql://u:s3cret-pw@h:5432/",
        "postgresql://u:s3cret-pw@h:5432/d?sslmod=require",
        "postgresql://u:s3cret-pw@h1,h2/d",
        "s3cret-pw",
    ],
)
def test_a_malformed_url_is_refused_without_showing_the_password(url: str) -> None:
    with pytest.raises(InvalidArgument) as caught:
        parse_store_url(url, environ={})
    assert "s3cret-pw" not in str(caught.value) and "s3cret-pw" not in repr(caught.value.to_dict())


def test_a_malformed_url_in_the_environment_creates_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths, _ = init_project(tmp_path / "proj")
    monkeypatch.setenv(ENV_STORE_URL, "postgresql://u:s3cret-pw@h:0/d")
    with pytest.raises(InvalidArgument, match=ENV_STORE_URL) as caught:
        open_store(paths)
    assert "s3cret-pw" not in str(caught.value)
    assert not paths.database.exists()


def test_an_unreachable_server_names_host_and_database_and_creates_nothing(
    tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with psycopg.connect(pg_url) as conn:  # a port nothing listens on: the server's own, plus one
        port = int(conn.execute("SELECT current_setting('port')").fetchone()[0]) + 1  # type: ignore[index]
    url = f"postgresql://roundtable:s3cret-pw@127.0.0.1:{port}/somedb"
    paths, _ = init_project(tmp_path / "proj")
    monkeypatch.setenv(ENV_STORE_URL, url)
    with pytest.raises(StoreUnavailable) as caught:
        open_store(paths)
    message = str(caught.value)
    assert "127.0.0.1" in message and "somedb" in message and "cannot be reached" in message
    assert "s3cret-pw" not in message
    assert not paths.database.exists()


def test_refused_credentials_and_a_missing_database_create_nothing(
    tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths, _ = init_project(tmp_path / "proj")
    before = _schemas(pg_url)
    monkeypatch.setenv(ENV_STORE_URL, _swap_password(pg_url, "wrong-s3cret"))
    with pytest.raises(StoreUnavailable, match="refused the credentials") as caught:
        open_store(paths)
    assert "wrong-s3cret" not in str(caught.value) and _password(pg_url) not in str(caught.value)
    monkeypatch.setenv(ENV_STORE_URL, pg_url.rsplit("/", 1)[0] + "/no_such_db")
    with pytest.raises(StoreUnavailable, match="no such database") as caught:
        open_store(paths)
    assert _password(pg_url) not in str(caught.value) and "no_such_db" in str(caught.value)
    assert _schemas(pg_url) == before
    assert not paths.database.exists()


# -- where the rows live, and isolation between projects --------------------------------------------


def test_rows_live_in_postgresql_in_the_projects_own_schema(pg_store: Store, pg_url: str) -> None:
    task = pg_store.tasks.create(title="in postgres", actor="op")
    schema = default_schema(pg_store.paths.root)
    with psycopg.connect(pg_url) as conn:
        titles = conn.execute(f'SELECT title FROM "{schema}".tasks WHERE id = %s', (task.id,)).fetchall()
        events = conn.execute(f'SELECT type FROM "{schema}".events ORDER BY id').fetchall()
    assert titles == [("in postgres",)]
    assert events == [("task.created",)]
    assert not pg_store.paths.database.exists()  # no SQLite file beside it


def test_two_projects_in_one_database_see_only_their_own_rows(
    tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV_STORE_URL, pg_url)
    stores = [open_store(init_project(tmp_path / name)[0]) for name in ("a", "b")]
    try:
        made = stores[0].tasks.create(title="only in a", actor="op")
        assert [t.id for t in stores[0].tasks.list()[0]] == [made.id]
        assert stores[1].tasks.list()[0] == []
        assert stores[1].event_feed.last_id() == 0 < stores[0].event_feed.last_id()
        schemas = {default_schema(s.paths.root) for s in stores}
        assert len(schemas) == 2 and schemas <= _schemas(pg_url)
    finally:
        for opened in stores:
            opened.close()
            _drop(pg_url, default_schema(opened.paths.root))


def test_the_schema_key_names_the_projects_schema(tmp_path: Path, pg_url: str) -> None:
    paths, _ = init_project(tmp_path / "proj")
    config = paths.config_file.read_text(encoding="utf-8")
    paths.config_file.write_text(
        config.replace('url = ""', f'url = "{pg_url}"', 1).replace('schema = ""', 'schema = "rt_named"', 1),
        encoding="utf-8",
    )
    opened = open_store(paths)
    try:
        assert opened.db.describe().endswith("schema rt_named")
        assert _password(pg_url) not in opened.db.describe()
        assert "rt_named" in _schemas(pg_url)
    finally:
        opened.close()
        _drop(pg_url, "rt_named")


def test_migrations_carry_the_same_versions_on_both_backends(pg_store: Store, pg_url: str) -> None:
    assert pg_migration_names() == [m.name for m in load_migrations()]
    with psycopg.connect(pg_url) as conn:
        schema = default_schema(pg_store.paths.root)
        applied = [r[0] for r in conn.execute(f'SELECT name FROM "{schema}".schema_migrations ORDER BY name')]
    assert applied == pg_migration_names()
    reopened = open_store(pg_store.paths)  # a second open applies nothing
    reopened.close()
    assert isinstance(pg_store.db, PostgresDatabase) and pg_store.db.migrate() == []


# -- the write lock, retries and error translation ---------------------------------------------------


def test_writers_of_one_project_take_turns_and_lose_nothing(pg_store: Store) -> None:
    """Several stores on one project write at once; every write lands and event IDs follow commits."""
    others = [open_store(pg_store.paths) for _ in range(3)]
    errors: list[BaseException] = []

    def work(opened: Store) -> None:
        try:
            for i in range(10):
                opened.tasks.create(title=f"t{i}", actor="op")
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(s,)) for s in [pg_store, *others]]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for opened in others:
        opened.close()
    assert errors == []

    def read(conn: Any) -> tuple[int, list[int]]:
        tasks = conn.execute("SELECT count(*) FROM tasks").fetchone()[0]
        return tasks, [r[0] for r in conn.execute("SELECT id FROM events ORDER BY created_at, id")]

    tasks, event_ids = pg_store.db.read(read)
    assert tasks == 40
    assert event_ids == sorted(event_ids) and len(event_ids) == 40  # commit order is ID order


def test_a_writer_held_past_the_lock_timeout_is_store_busy_and_writes_nothing(
    pg_project: ProjectPaths,
) -> None:
    opened = open_store(pg_project)
    opened.close()
    assert isinstance(opened.db, PostgresDatabase)
    db = PostgresDatabase(opened.db.url, opened.db.schema, lock_timeout_ms=50, write_attempts=2)
    inside, release = threading.Event(), threading.Event()

    def hold(conn: Any) -> None:
        inside.set()
        release.wait()

    holder = threading.Thread(target=db.write, args=(hold,))
    holder.start()
    inside.wait()
    try:
        with pytest.raises(StoreBusy) as caught:
            db.write(
                lambda conn: conn.execute(
                    "INSERT INTO tasks (id, title, created_by, created_at, updated_at)"
                    " VALUES ('T-x', 't', 'op', 'now', 'now')"
                )
            )
        assert isinstance(caught.value.__cause__, psycopg.errors.LockNotAvailable)
    finally:
        release.set()
        holder.join()
    assert db.read(lambda conn: conn.execute("SELECT count(*) FROM tasks").fetchone()[0]) == 0
    db.close()


def test_schema_triggers_refuse_changes_as_conflicts(pg_store: Store) -> None:
    _, proposal_id = insert_proposal(pg_store)
    pg_store.tasks.create(title="x", actor="op")
    with pytest.raises(psycopg.errors.IntegrityConstraintViolation, match="append-only"):
        pg_store.db.connection().execute("DELETE FROM events")
    with pytest.raises(Conflict, match="events are append-only; nothing was changed"):
        pg_store.db.write(lambda conn: conn.execute("UPDATE events SET type = 'x'"))
    grant = pg_store.grants.mint_grant(
        proposal_id=proposal_id, role="memory_oracle", agent_id="memory-oracle-1",
        tools=frozenset({"task.history"}), ttl_seconds=60, actor="op",
    )  # fmt: skip
    with pytest.raises(Conflict, match="immutable except for its revocation"):
        pg_store.db.write(
            lambda conn: conn.execute(
                "UPDATE capability_grants SET proposal_id = 'P-other' WHERE id = ?", (grant.record.id,)
            )
        )


def test_a_failure_inside_a_write_is_translated_and_rolls_the_change_back(
    pg_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = project_snapshot(pg_store.paths)

    def broken(*args: Any, **kwargs: Any) -> None:
        raise psycopg.errors.DiskFull("could not extend file (injected)")

    monkeypatch.setattr(log_module, "append_event", broken)
    monkeypatch.setattr("store.work._tasks.append_event", broken)
    with pytest.raises(InternalError) as caught:
        pg_store.tasks.create(title="never", actor="op")
    assert isinstance(caught.value.__cause__, psycopg.errors.DiskFull)
    assert "injected" not in str(caught.value)  # nothing of the database's own words reaches a caller
    assert project_snapshot(pg_store.paths) == before


# -- the password stays secret ----------------------------------------------------------------------


def test_the_password_is_in_no_row_no_error_and_no_doctor_output(
    pg_project: ProjectPaths, pg_url: str
) -> None:
    password = _password(pg_url)
    env = {"PATH": "/usr/bin:/bin", ENV_STORE_URL: pg_url, "PYTHONPATH": str(REPO_ROOT)}
    argv = [sys.executable, "-m", "supervisor", "--root", str(pg_project.root)]
    created = subprocess.run(
        [*argv[:3], "task", "create", "--title", "t", "--root", str(pg_project.root), "--json"],
        capture_output=True, text=True, env=env, check=False, timeout=120,
    )  # fmt: skip
    assert created.returncode == 0, created.stderr
    assert password not in created.stdout + created.stderr
    doctor = subprocess.run(
        [*argv[:3], "doctor", "--root", str(pg_project.root), "--json"],
        capture_output=True, text=True, env=env, check=False, timeout=120,
    )  # fmt: skip
    assert password not in doctor.stdout + doctor.stderr
    checks = {c["name"]: c for c in json.loads(doctor.stdout)["checks"]}
    assert checks["database"]["ok"] is True, checks["database"]
    assert "PostgreSQL" in checks["database"]["detail"] and "migrations" in checks["database"]["detail"]
    refused = subprocess.run(
        [*argv[:3], "doctor", "--root", str(pg_project.root), "--json"],
        capture_output=True, text=True, check=False, timeout=120,
        env={**env, ENV_STORE_URL: _swap_password(pg_url, "wrong-s3cret")},
    )  # fmt: skip
    database = {c["name"]: c for c in json.loads(refused.stdout)["checks"]}["database"]
    assert database["ok"] is False and "refused the credentials" in database["detail"]
    assert "wrong-s3cret" not in refused.stdout + refused.stderr and password not in refused.stdout
    with psycopg.connect(pg_url) as conn:
        schema = default_schema(pg_project.root)
        tables = [r[0] for r in conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = %s", (schema,)
        )]  # fmt: skip
        dump = "\n".join(
            repr(conn.execute(f'SELECT * FROM "{schema}"."{table}"').fetchall()) for table in tables
        )
    assert "task.created" in dump and password not in dump


def test_only_the_token_hash_is_stored_in_postgresql(pg_store: Store, pg_url: str) -> None:
    _, proposal_id = insert_proposal(pg_store)
    issued = pg_store.grants.mint_grant(
        proposal_id=proposal_id, role="memory_oracle", agent_id="memory-oracle-1",
        tools=frozenset({"task.history"}), ttl_seconds=60, actor="op",
    )  # fmt: skip
    pg_store.grants.revoke(issued.record.id, actor="op")
    schema = default_schema(pg_store.paths.root)
    with psycopg.connect(pg_url) as conn:
        tables = [r[0] for r in conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = %s", (schema,)
        )]  # fmt: skip
        dump = "\n".join(repr(conn.execute(f'SELECT * FROM "{schema}"."{t}"').fetchall()) for t in tables)
    assert issued.record.id in dump and issued.token not in dump


# -- the lists in tests/store/conftest.py stay true ----------------------------------------------------


def test_the_backend_lists_name_real_tests() -> None:
    for module in POSTGRES_MODULES:
        assert (REPO_ROOT / module).is_file(), module
    for test in SQLITE_ONLY:
        module, _, name = test.partition("::")
        assert module in POSTGRES_MODULES, test
        assert f"def {name}(" in (REPO_ROOT / module).read_text(encoding="utf-8"), test


# -- memory.query on PostgreSQL answers what the contract's model answers ------------------------------


@pytest.fixture(scope="module")
def shared_pg_store(tmp_path_factory: pytest.TempPathFactory, pg_url: str) -> Iterator[Store]:
    """One PostgreSQL-backed store for the property test's many examples."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(ENV_STORE_URL, pg_url)
        paths, _ = init_project(Path(tmp_path_factory.mktemp("pgprop")) / "proj")
        opened = open_store(paths)
    yield opened
    opened.close()
    _drop(pg_url, default_schema(paths.root))


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), entries=st.lists(_ENTRY, min_size=0, max_size=8))
def test_memory_query_on_postgresql_answers_exactly_what_the_contract_says(
    shared_pg_store: Store, data: st.DataObject, entries: list[dict[str, Any]]
) -> None:
    """Random Unicode entries and queries (case pairs that fold unlike ASCII, LIKE's own characters,
    quotes, emoji): PostgreSQL's answer is the model's (Python's ``lower()`` and ``count()``)."""
    store = shared_pg_store
    store.db.write(
        lambda conn: [conn.execute(f"DELETE FROM {t}") for t in ("memory_revisions", "memory_entries")]
    )
    stored = store.memory.record_many(entries, actor="tester") if entries else []
    recorded = [
        {name: getattr(entry, name) for name in ("id", "title", "body_md", "scope", "kind", "importance")}
        for entry in stored
    ]
    for _ in range(4):
        query = data.draw(_queries(recorded))
        limit = data.draw(st.sampled_from([0, 1, 3, 10]))
        scope = data.draw(st.sampled_from([None, *(e["scope"] for e in recorded)]))
        found = store.memory.query(query, scope=scope, limit=limit)
        model = _model([e for e in recorded if scope is None or e["scope"] == scope], query)
        assert [(e.id, e.score) for e in found] == (model[:limit] if limit > 0 else model), query
