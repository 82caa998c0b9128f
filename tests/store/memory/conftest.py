"""Fixtures of the memory search tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from store import Store, init_project, open_store


@pytest.fixture(scope="module")
def shared_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    """One SQLite project for a whole module (property tests wipe it between examples)."""
    paths, _ = init_project(Path(tmp_path_factory.mktemp("memory")) / "proj")
    store = open_store(paths)
    yield store
    store.close()
