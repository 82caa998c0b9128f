"""Fixtures shared by the whole suite: real projects on disk with real SQLite databases, and the
real Docker engine with the role image (Docker tests fail, never skip, without them).

With ``ROUNDTABLE_STORE_URL`` at a PostgreSQL server when pytest starts (an outside suite run on
PostgreSQL), every project lives in its own schema there, and :func:`_rows_live_in_postgresql`
fails any test outside ``tests/store`` (which runs both backends itself) that leaves a SQLite
``roundtable.db`` in its temporary directory: a process that fell back to SQLite would otherwise
pass unnoticed.
"""

from __future__ import annotations

import gc
import os
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import docker
import docker.errors
import pytest

from capabilities.mcp._registry import ToolRegistry
from capabilities.mcp.tools import build_registry
from capabilities.services import Services
from store import ProjectPaths, Store, init_project, open_store

REPO_ROOT = Path(__file__).resolve().parent.parent

_ON_POSTGRESQL = os.environ.get("ROUNDTABLE_STORE_URL", "").strip().startswith(("postgresql:", "postgres:"))
"""Read once at start, before any test's monkeypatch: the backend the whole run was pointed at."""


def _is_sqlite(path: Path) -> bool:
    """A SQLite database, or the empty file SQLite creates (not a test's stand-in with other bytes)."""
    with path.open("rb") as handle:
        head = handle.read(16)
    return head in (b"", b"SQLite format 3\x00")


@pytest.fixture(autouse=True)
def _rows_live_in_postgresql(request: pytest.FixtureRequest) -> Iterator[None]:
    """On a PostgreSQL run, fail a test whose temporary directory grew a ``roundtable.db``."""
    in_store_suite = Path(str(request.node.path)).is_relative_to(REPO_ROOT / "tests" / "store")
    if not _ON_POSTGRESQL or in_store_suite or "tmp_path" not in request.fixturenames:
        yield
        return
    tmp_path: Path = request.getfixturevalue("tmp_path")
    yield
    found = tmp_path.rglob("roundtable.db")
    stray = sorted(str(path.relative_to(tmp_path)) for path in found if _is_sqlite(path))
    if stray:
        pytest.fail(f"ROUNDTABLE_STORE_URL is PostgreSQL, yet SQLite files were made: {stray}", pytrace=False)


@pytest.fixture
def project(tmp_path: Path) -> ProjectPaths:
    """A freshly initialised project in a temporary directory."""
    paths, _ = init_project(tmp_path / "proj")
    open_store(paths).close()
    return paths


@pytest.fixture
def store(project: ProjectPaths) -> Iterator[Store]:
    """The open store of :func:`project`."""
    opened = open_store(project)
    try:
        yield opened
    finally:
        opened.close()


@pytest.fixture
def services(store: Store) -> Services:
    """Tool services over :func:`store`."""
    return Services(store=store)


@pytest.fixture(scope="session")
def registry() -> ToolRegistry:
    """The full tool registry."""
    return build_registry()


@pytest.fixture(scope="session")
def roundtable_argv() -> list[str]:
    """How to run the ``roundtable`` command in a subprocess with this interpreter."""
    return [sys.executable, "-m", "supervisor"]


@pytest.fixture
def anyio_backend() -> str:
    """Async tests run on asyncio (``@pytest.mark.anyio``)."""
    return "asyncio"


@pytest.fixture(scope="session")
def docker_sdk() -> Iterator[Any]:
    """A docker SDK client for looking at containers from outside; fails (never skips) without an engine."""
    reason = ""
    try:
        client = docker.from_env()
        client.ping()
    except (docker.errors.DockerException, OSError) as exc:
        reason = str(exc)
    if reason:
        with warnings.catch_warnings():  # the SDK leaks the socket of a failed connect; drop it quietly
            warnings.simplefilter("ignore", ResourceWarning)
            gc.collect()
        pytest.fail(
            f"the Docker engine is unreachable ({reason}); the docker tests need it and never skip",
            pytrace=False,
        )
    try:
        yield client
    finally:
        client.close()


@pytest.fixture(scope="session")
def role_image_tag(docker_sdk: Any) -> str:
    """The role image's tag; built offline once when missing (``make test`` builds it first)."""
    from supervisor.image._build import build_role_image, role_image_tag

    tag = role_image_tag()
    try:
        docker_sdk.images.get(tag)
    except docker.errors.ImageNotFound:
        try:
            build_role_image(offline=True, progress=lambda line: None, repo_root=REPO_ROOT)
        except Exception as exc:
            pytest.fail(f"the role image {tag} is missing and could not be built: {exc}", pytrace=False)
    return tag
