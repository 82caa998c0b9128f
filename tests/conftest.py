"""Fixtures shared by the whole suite: real projects on disk with real SQLite databases."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from capabilities.registry import ToolRegistry
from capabilities.services import Services
from capabilities.tools import build_registry
from store import ProjectPaths, Store, init_project, open_store

REPO_ROOT = Path(__file__).resolve().parent.parent


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
