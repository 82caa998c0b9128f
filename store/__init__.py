"""Roundtable's store: the only code that touches SQLite or files under ``.roundtable``.

:class:`Store` opens a project's database (applying migrations) and hands out the per-concept
stores. Every store method is blocking; async callers go through :meth:`Database.run`.

The errors and the text rule are imported with the package; everything else is exported lazily
(PEP 562), on first use, so that ``import store.errors`` (the CLI's ``--help``, say) does not
import pydantic, SQLite and every per-concept store.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from store import _plain_structlog
from store._lazy import lazy_exports
from store._text import MAX_JSON_DEPTH, TEXT_PATTERN, check_depth, check_int, parse_decimal, parse_json
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

_plain_structlog.install()

if TYPE_CHECKING:
    from store._feedback import FEEDBACK_EVENT, MAX_REASON_CHARS, OracleFeedback, Verdict
    from store._ids import resolve_id_prefix
    from store._oracle import MAX_CITATIONS, MAX_EVIDENCE, MAX_EVIDENCE_LINE, MAX_EVIDENCE_TEXT, OracleStore
    from store._project import ProjectPaths, find_project_root, init_project
    from store._store import Store, open_store
    from store.access import ConsoleSessions, GrantRecord, GrantStore
    from store.config import ProjectConfig, package_version
    from store.db import Database, apply_migrations
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
    "lazy_exports",
    "list_events",
    "open_store",
    "package_version",
    "parse_decimal",
    "parse_json",
    "patch_relative_path",
    "resolve_id_prefix",
]

_LAZY: dict[str, tuple[str, ...]] = {
    "store._ids": ("resolve_id_prefix",),
    "store._feedback": ("FEEDBACK_EVENT", "MAX_REASON_CHARS", "OracleFeedback", "Verdict"),
    "store._oracle": (
        "MAX_CITATIONS",
        "MAX_EVIDENCE",
        "MAX_EVIDENCE_LINE",
        "MAX_EVIDENCE_TEXT",
        "OracleStore",
    ),
    "store._project": ("ProjectPaths", "find_project_root", "init_project"),
    "store._store": ("Store", "open_store"),
    "store.access": ("ConsoleSessions", "GrantRecord", "GrantStore"),
    "store.config": ("ProjectConfig", "package_version"),
    "store.db": ("Database", "apply_migrations"),
    "store.events": ("Event", "EventFeed", "append_event", "list_events"),
    "store.files": ("SafeFiles",),
    "store.launches": ("Launch", "LaunchStatus", "LaunchStore"),
    "store.memory": ("MemoryAdmin", "MemoryEntry", "MemoryStore"),
    "store.patches": ("PatchArtifactStore", "patch_relative_path"),
    "store.work": (
        "DecisionStore",
        "ProposalStore",
        "ReviewStore",
        "TaskStore",
        "TimelineStore",
        "WorkspaceStore",
    ),
}
if not TYPE_CHECKING:  # for mypy, the imports above: a misspelt name is an error
    __getattr__ = lazy_exports(__name__, _LAZY)
