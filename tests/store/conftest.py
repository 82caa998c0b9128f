"""The store suite on both backends: SQLite, and a real PostgreSQL server.

Every test of a module listed in :data:`POSTGRES_MODULES` that uses the ``project`` (or ``store``)
fixture runs twice: ``[sqlite]`` and ``[postgresql]``. The PostgreSQL run points
``ROUNDTABLE_STORE_URL`` at the server (as an outside suite would) for the test's duration, so the
project's rows live in its own schema there; the schema is dropped afterwards.

The server is the one ``.ci/pytest.sh`` started (``ROUNDTABLE_TEST_PG_URL``), or, when pytest runs
on its own, a throwaway one this file starts with the same script and stops at the end.

Modules not yet listed still run on SQLite only, even when the run's ``ROUNDTABLE_STORE_URL`` is
PostgreSQL. The list is the one place that says which parts of the store are ported
(docs/scaling.md): a gap is visible here, never a silent skip.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from store import ProjectPaths, init_project, open_store
from store.db import ENV_STORE_URL

REPO_ROOT = Path(__file__).resolve().parents[2]

POSTGRES_MODULES = frozenset(
    {
        "tests/store/access/test_agent_tokens.py",
        "tests/store/access/test_grants.py",
        "tests/store/feedback/test_feedback.py",
        "tests/store/memory/test_memory.py",
        "tests/store/memory/test_memory_admin.py",
        "tests/store/memory/test_memory_checks.py",
        "tests/store/memory/test_memory_rank_info.py",
        "tests/store/memory/test_ownership.py",
        "tests/store/memory/test_write_path.py",
        "tests/store/launches/test_launch_failures.py",
        "tests/store/launches/test_launches.py",
        "tests/store/launches/test_leases.py",
        "tests/store/patches/test_apply.py",
        "tests/store/patches/test_db_artifacts.py",
        "tests/store/patches/test_patches.py",
        "tests/store/work/test_lifecycle.py",
        "tests/store/work/test_proposals.py",
        "tests/store/work/test_tasks.py",
        "tests/store/work/test_timeline.py",
        "tests/store/work/test_votes.py",
        "tests/store/db/test_postgres.py",
        "tests/store/db/test_rows_in_postgres.py",
        "tests/store/db/test_workers.py",
        "tests/store/test_config_launches.py",
        "tests/store/test_oracle_history.py",
    }
)
"""Store test modules that also run against PostgreSQL (paths from the repository root)."""

SQLITE_ONLY = {
    "tests/store/access/test_grants.py::test_only_the_hash_is_stored_and_the_token_is_nowhere":
        "dumps the SQLite file (iterdump); test_postgres.py dumps the schema",
    "tests/store/access/test_grants.py::test_a_grant_binding_is_immutable_in_the_database":
        "expects sqlite3.IntegrityError; test_postgres.py checks the trigger on PostgreSQL",
    "tests/store/access/test_grants.py::test_a_database_error_while_minting_is_not_reported_as_not_found":
        "expects sqlite3.OperationalError in the chain; test_postgres.py injects a psycopg error",
    "tests/store/launches/test_launches.py::test_status_change_and_event_share_one_transaction":
        "injects a sqlite3 error; test_postgres.py injects a psycopg error",
    "tests/store/feedback/test_feedback.py::test_stats_reads_no_full_scan_of_the_events":
        "reads SQLite's EXPLAIN QUERY PLAN through set_trace_callback",
    "tests/store/memory/test_memory.py::test_events_are_append_only":
        "expects sqlite3.IntegrityError; test_postgres.py checks the triggers on PostgreSQL",
    "tests/store/memory/test_memory_admin.py::test_fix_expected_revision_is_enforced_by_the_update_statement":
        "reads the statements through SQLite's set_trace_callback",
    "tests/store/memory/test_memory_admin.py::test_a_failing_audit_write_rolls_back_the_change_and_its_event":
        "injects the failure with a SQLite TEMP TRIGGER",
}  # fmt: skip
"""Tests of a listed module that stay on SQLite, each with why (what covers it on PostgreSQL)."""

BACKENDS = ("sqlite", "postgresql")


def _module_path(metafunc: pytest.Metafunc) -> str:
    return Path(str(metafunc.definition.path)).resolve().relative_to(REPO_ROOT).as_posix()


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Run the listed modules' project tests on both backends."""
    if "store_backend" not in metafunc.fixturenames:
        return
    module = _module_path(metafunc)
    ported = module in POSTGRES_MODULES and f"{module}::{metafunc.function.__name__}" not in SQLITE_ONLY
    backends = BACKENDS if ported else BACKENDS[:1]
    metafunc.parametrize("store_backend", backends, indirect=True)


@pytest.fixture(scope="module", autouse=True)
def _unported_modules_stay_on_sqlite(request: pytest.FixtureRequest) -> Iterator[None]:
    """A module not in :data:`POSTGRES_MODULES` tests SQLite itself (its file, its trigram index):
    it runs on SQLite even when the whole run's ``ROUNDTABLE_STORE_URL`` is PostgreSQL."""
    module = Path(str(request.node.path)).resolve().relative_to(REPO_ROOT).as_posix()
    if module in POSTGRES_MODULES:
        yield
        return
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv(ENV_STORE_URL, raising=False)
        yield


@pytest.fixture
def store_backend(request: pytest.FixtureRequest) -> str:
    """``sqlite`` or ``postgresql``: the backend this test's project uses."""
    return str(getattr(request, "param", "sqlite"))


@pytest.fixture(scope="session")
def pg_url() -> Iterator[str]:
    """The URL of a real PostgreSQL server for this session (started here when none was given)."""
    given = os.environ.get("ROUNDTABLE_TEST_PG_URL", "").strip()
    if given:
        yield given
        return
    folder = tempfile.mkdtemp(prefix="roundtable-pg.")
    script = str(REPO_ROOT / ".ci" / "postgres.sh")
    try:
        started = subprocess.run(
            ["bash", script, "start", folder], capture_output=True, text=True, check=False
        )
        if started.returncode != 0:
            pytest.fail(
                f"could not start a throwaway PostgreSQL server: {started.stderr[-2000:]}", pytrace=False
            )
        yield started.stdout.strip()
    finally:
        subprocess.run(["bash", script, "stop", folder], capture_output=True, check=False)


def _drop_schema(url: str, root: Path) -> None:
    import psycopg

    from store.db._postgres import default_schema

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{default_schema(root)}" CASCADE')


@pytest.fixture
def project(
    tmp_path: Path, store_backend: str, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Iterator[ProjectPaths]:
    """A freshly initialised project, its store on this test's backend."""
    url = ""
    if store_backend == "postgresql":
        url = request.getfixturevalue("pg_url")
        monkeypatch.setenv(ENV_STORE_URL, url)
    else:
        monkeypatch.delenv(ENV_STORE_URL, raising=False)
    paths, _ = init_project(tmp_path / "proj")
    open_store(paths).close()
    try:
        yield paths
    finally:
        if url:
            _drop_schema(url, paths.root)
