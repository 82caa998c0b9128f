"""An open project: :class:`Store`, its per-concept stores, and :func:`open_store`."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from store._project import ProjectPaths
from store.access import ConsoleSessions, GrantStore
from store.config import ProjectConfig
from store.db import Database, open_database
from store.events import EventFeed
from store.files import SafeFiles
from store.launches import LaunchStore
from store.memory import MemoryAdmin, MemoryStore
from store.patches import PatchArtifactStore, open_patch_artifacts
from store.work import DecisionStore, ProposalStore, ReviewStore, TaskStore, TimelineStore, WorkspaceStore

__all__ = ["Store", "open_store"]


@dataclass
class Store:
    """An open project: its paths, configuration, database and per-concept stores."""

    paths: ProjectPaths
    config: ProjectConfig
    db: Database
    memory: MemoryStore = field(init=False)
    memory_admin: MemoryAdmin = field(init=False)
    event_feed: EventFeed = field(init=False)
    console_sessions: ConsoleSessions = field(init=False)
    launches: LaunchStore = field(init=False)
    grants: GrantStore = field(init=False)
    files: SafeFiles = field(init=False)
    tasks: TaskStore = field(init=False)
    patches: PatchArtifactStore = field(init=False)
    proposals: ProposalStore = field(init=False)
    reviews: ReviewStore = field(init=False)
    decisions: DecisionStore = field(init=False)
    timeline: TimelineStore = field(init=False)
    workspace: WorkspaceStore = field(init=False)

    def __post_init__(self) -> None:
        self.memory = MemoryStore(self.db)
        self.memory_admin = MemoryAdmin(self.db)
        self.event_feed = EventFeed(self.db)
        self.console_sessions = ConsoleSessions(self.db)
        self.launches = LaunchStore(self.db)
        self.grants = GrantStore(self.db, roster=self.config.agents)
        self.files = SafeFiles(self.paths.root)
        self.tasks = TaskStore(self.db)
        self.patches = open_patch_artifacts(
            self.db, self.paths, self.files, max_bytes=self.config.policy.max_patch_bytes
        )
        self.proposals = ProposalStore(self.db, self.config, self.patches)
        self.reviews = ReviewStore(self.db, self.config)
        self.decisions = DecisionStore(self.db, self.config)
        self.timeline = TimelineStore(self.db, self.config, self.memory)
        self.workspace = WorkspaceStore(self.db, self.paths.root, self.config, self.patches)

    def close(self) -> None:
        """Close every database connection and the project root handle."""
        self.files.close()
        self.db.close()


def open_store(paths: ProjectPaths) -> Store:
    """Open an initialised project's database, applying any pending migrations.

    The database is the project's SQLite file, or its schema in the PostgreSQL database that
    ``ROUNDTABLE_STORE_URL`` or ``[store] url`` names.
    """
    config = paths.load_config()
    db = open_database(
        url=config.store.url,
        schema=config.store.schema_name,
        sqlite_path=Path(paths.database),
        root=paths.root,
    )
    return Store(paths=paths, config=config, db=db)
