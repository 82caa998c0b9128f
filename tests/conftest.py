"""Fixtures shared by the whole suite: real projects on disk with real SQLite databases, and the
real Docker engine with the role image (Docker tests fail, never skip, without them)."""

from __future__ import annotations

import gc
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
