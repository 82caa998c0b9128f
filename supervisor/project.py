"""Opening a project for a command: root discovery, the store, the services."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from capabilities.services import Services
from store import Store, find_project_root, open_store

__all__ = ["open_project", "open_services"]


@contextmanager
def open_project(root: str | Path | None) -> Iterator[Store]:
    """The store of the project at ``root`` (or discovered from the working directory)."""
    store = open_store(find_project_root(root))
    try:
        yield store
    finally:
        store.close()


@contextmanager
def open_services(root: str | Path | None) -> Iterator[Services]:
    """Tool services over the project at ``root``."""
    with open_project(root) as store:
        yield Services(store=store)
