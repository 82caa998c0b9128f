"""Roundtable's store: the only code that touches SQLite or files under ``.roundtable``.

:class:`Store` opens a project's database (applying migrations) and hands out the per-concept
stores. Every store method is blocking; async callers go through :meth:`Database.run`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from store.config import ProjectConfig, package_version
from store.db import Database
from store.errors import (
    ArtifactMismatch,
    Conflict,
    DockerUnavailable,
    Forbidden,
    InternalError,
    InvalidArgument,
    InvalidCitation,
    LaunchFailed,
    LaunchTimeout,
    NotFound,
    NotInitialized,
    RoundtableError,
    Unauthenticated,
    UnsafePath,
)
from store.events import Event, append_event, list_events
from store.grants import GrantStore
from store.launches import Launch, LaunchStatus, LaunchStore
from store.memory import MemoryEntry, MemoryStore
from store.migrations import apply_migrations
from store.project import ProjectPaths, find_project_root, init_project
from store.safe_files import SafeFiles

__all__ = [
    "ArtifactMismatch",
    "Conflict",
    "Database",
    "DockerUnavailable",
    "Event",
    "Forbidden",
    "GrantStore",
    "InternalError",
    "InvalidArgument",
    "InvalidCitation",
    "Launch",
    "LaunchFailed",
    "LaunchStatus",
    "LaunchStore",
    "LaunchTimeout",
    "MemoryEntry",
    "MemoryStore",
    "NotFound",
    "NotInitialized",
    "ProjectConfig",
    "ProjectPaths",
    "RoundtableError",
    "SafeFiles",
    "Store",
    "Unauthenticated",
    "UnsafePath",
    "append_event",
    "find_project_root",
    "init_project",
    "list_events",
    "open_store",
    "package_version",
]


@dataclass
class Store:
    """An open project: its paths, configuration, database and per-concept stores."""

    paths: ProjectPaths
    config: ProjectConfig
    db: Database
    memory: MemoryStore = field(init=False)
    launches: LaunchStore = field(init=False)
    grants: GrantStore = field(init=False)
    files: SafeFiles = field(init=False)

    def __post_init__(self) -> None:
        self.memory = MemoryStore(self.db)
        self.launches = LaunchStore(self.db)
        self.grants = GrantStore(self.db)
        self.files = SafeFiles(self.paths.root)

    def close(self) -> None:
        """Close every database connection and the project root handle."""
        self.files.close()
        self.db.close()


def open_store(paths: ProjectPaths) -> Store:
    """Open an initialised project's database, applying any pending migrations."""
    config = paths.load_config()
    db = Database(Path(paths.database))
    db.connection()  # opens the file in WAL mode
    apply_migrations(db.connection())
    return Store(paths=paths, config=config, db=db)
