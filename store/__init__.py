"""Roundtable's store: the only code that touches SQLite or files under ``.roundtable``.

:class:`Store` opens a project's database (applying migrations) and hands out the per-concept
stores. Every store method is blocking; async callers go through :meth:`Database.run`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from store._feedback import FEEDBACK_EVENT, MAX_REASON_CHARS, OracleFeedback, Verdict
from store._oracle import MAX_CITATIONS, MAX_EVIDENCE, MAX_EVIDENCE_LINE, MAX_EVIDENCE_TEXT, OracleStore
from store._project import ProjectPaths, find_project_root, init_project
from store._text import MAX_JSON_DEPTH, TEXT_PATTERN, check_depth, check_int, parse_decimal, parse_json
from store.access import ConsoleSessions, GrantRecord, GrantStore
from store.config import ProjectConfig, package_version
from store.db import Database, apply_migrations
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
from store.events import Event, EventFeed, append_event, list_events
from store.files import SafeFiles
from store.launches import Launch, LaunchStatus, LaunchStore
from store.memory import MemoryAdmin, MemoryEntry, MemoryStore
from store.patches import PatchArtifactStore, patch_relative_path
from store.work import DecisionStore, ProposalStore, ReviewStore, TaskStore, TimelineStore, WorkspaceStore

__all__ = [
    "FEEDBACK_EVENT",
    "MAX_CITATIONS",
    "MAX_EVIDENCE",
    "MAX_EVIDENCE_LINE",
    "MAX_EVIDENCE_TEXT",
    "MAX_JSON_DEPTH",
    "MAX_REASON_CHARS",
    "TEXT_PATTERN",
    "ArtifactMismatch",
    "Conflict",
    "ConsoleSessions",
    "Database",
    "DecisionStore",
    "DockerUnavailable",
    "Event",
    "EventFeed",
    "Forbidden",
    "GrantRecord",
    "GrantStore",
    "InternalError",
    "InvalidArgument",
    "InvalidCitation",
    "Launch",
    "LaunchFailed",
    "LaunchStatus",
    "LaunchStore",
    "LaunchTimeout",
    "MemoryAdmin",
    "MemoryEntry",
    "MemoryStore",
    "NotFound",
    "NotInitialized",
    "OracleFeedback",
    "OracleStore",
    "PatchArtifactStore",
    "ProjectConfig",
    "ProjectPaths",
    "ProposalStore",
    "ReviewStore",
    "RoundtableError",
    "SafeFiles",
    "Store",
    "TaskStore",
    "TimelineStore",
    "Unauthenticated",
    "UnsafePath",
    "Verdict",
    "WorkspaceStore",
    "append_event",
    "apply_migrations",
    "check_depth",
    "check_int",
    "find_project_root",
    "init_project",
    "list_events",
    "open_store",
    "package_version",
    "parse_decimal",
    "parse_json",
    "patch_relative_path",
]


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
        self.patches = PatchArtifactStore(
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
    """Open an initialised project's database, applying any pending migrations."""
    config = paths.load_config()
    db = Database(Path(paths.database))
    db.connection()  # opens the file in WAL mode
    apply_migrations(db.connection())
    return Store(paths=paths, config=config, db=db)
