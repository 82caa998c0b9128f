"""The one exception hierarchy of Roundtable.

Every error a caller can see carries a stable ``code`` (see CONTRACTS.md, "Errors") and a
human-readable message. The same code means the same thing on the CLI, over MCP and over HTTP::

    RoundtableError                 code          HTTP
    ├── InvalidArgument             invalid_argument   400
    ├── NotFound                    not_found          404
    ├── Forbidden                   forbidden          403
    ├── Unauthenticated             unauthenticated    401
    ├── Conflict                    conflict           409
    ├── InvalidCitation             invalid_citation   400
    ├── UnsafePath                  unsafe_path        400
    ├── ArtifactMismatch            artifact_mismatch  409
    ├── NotInitialized              not_initialized    400
    ├── DockerUnavailable           docker_unavailable 503
    ├── LaunchFailed                launch_failed      500
    ├── LaunchTimeout               launch_timeout     504
    └── InternalError               internal           500

Subclasses may narrow the code for a specific HTTP route (for example the memory endpoints'
``memory_revision_conflict``) through the ``code`` argument; the class still decides the status.
Errors from third-party libraries are translated at the boundary that calls them and chained with
``raise ... from``, so a caller never sees ``sqlite3`` or ``docker`` exceptions.
"""

from __future__ import annotations

from typing import Any, ClassVar

__all__ = [
    "ArtifactMismatch",
    "Conflict",
    "DockerUnavailable",
    "Forbidden",
    "InternalError",
    "InvalidArgument",
    "InvalidCitation",
    "LaunchFailed",
    "LaunchTimeout",
    "NotFound",
    "NotInitialized",
    "RoundtableError",
    "Unauthenticated",
    "UnsafePath",
]


class RoundtableError(Exception):
    """Root of every error Roundtable reports to a caller."""

    code: ClassVar[str] = "internal"
    http_status: ClassVar[int] = 500

    def __init__(self, message: str, *, code: str | None = None, details: dict[str, Any] | None = None):
        super().__init__(message)
        self.message = message
        self.details = details or {}
        if code is not None:
            self.instance_code = code
        else:
            self.instance_code = type(self).code

    def to_dict(self) -> dict[str, Any]:
        """The structured error body: ``{"code", "message"}`` plus ``details`` when present."""
        body: dict[str, Any] = {"code": self.instance_code, "message": self.message}
        if self.details:
            body["details"] = self.details
        return body


class InvalidArgument(RoundtableError):
    """An argument is missing, of the wrong type, blank, too large or otherwise unacceptable."""

    code = "invalid_argument"
    http_status = 400


class NotFound(RoundtableError):
    """The named object does not exist."""

    code = "not_found"
    http_status = 404


class Forbidden(RoundtableError):
    """The caller is known but may not do this (tool outside its grant, foreign proposal or scope)."""

    code = "forbidden"
    http_status = 403


class Unauthenticated(RoundtableError):
    """No valid credential: missing, malformed, unknown, expired or revoked token."""

    code = "unauthenticated"
    http_status = 401


class Conflict(RoundtableError):
    """The request is valid but conflicts with the current state."""

    code = "conflict"
    http_status = 409


class InvalidCitation(RoundtableError):
    """An oracle warning cites a memory entry or event it may not cite."""

    code = "invalid_citation"
    http_status = 400


class UnsafePath(RoundtableError):
    """A path under ``.roundtable`` is a symlink, escapes the tree, or is not a plain file."""

    code = "unsafe_path"
    http_status = 400


class ArtifactMismatch(RoundtableError):
    """A stored artifact no longer matches the hash recorded in the database."""

    code = "artifact_mismatch"
    http_status = 409


class NotInitialized(RoundtableError):
    """No ``.roundtable/`` directory was found for this project."""

    code = "not_initialized"
    http_status = 400


class DockerUnavailable(RoundtableError):
    """The Docker engine cannot be reached."""

    code = "docker_unavailable"
    http_status = 503


class LaunchFailed(RoundtableError):
    """A role container could not be launched or failed."""

    code = "launch_failed"
    http_status = 500


class LaunchTimeout(RoundtableError):
    """A role container outlived its deadline and was killed."""

    code = "launch_timeout"
    http_status = 504


class InternalError(RoundtableError):
    """An unexpected failure; the message never carries a traceback."""

    code = "internal"
    http_status = 500


# Memory route codes
# The memory endpoints of the HTTP API narrow the generic codes (CONTRACTS, "HTTP API"); each is a
# subclass of the error whose HTTP status it answers with. They join ``__all__`` at the end of this
# block, so this block stays apart from the rest of the module.


class InvalidMemory(InvalidArgument):
    """``POST /memories``: a field of the new entry is missing, mistyped, blank or out of range."""

    code = "invalid_memory"


class InvalidRevision(InvalidArgument):
    """``POST /memories/{id}/revisions``: the body, title or reason of a revision is unacceptable."""

    code = "invalid_revision"


class InvalidExpectedRevision(InvalidArgument):
    """``POST /memories/{id}/revisions``: ``expected_revision`` is not a positive integer."""

    code = "invalid_expected_revision"


class InvalidMemoryTarget(InvalidArgument):
    """A merge names no ``target_id``."""

    code = "invalid_memory_target"


class InvalidMemoryAction(InvalidArgument):
    """A state action other than pin, unpin, archive and restore."""

    code = "invalid_memory_action"


class MemoryNotFound(NotFound):
    """The memory entry a route names does not exist."""

    code = "memory_not_found"


class MemoryTargetNotFound(NotFound):
    """The ``target_id`` of a merge names no entry."""

    code = "memory_target_not_found"


class RevisionNotFound(NotFound):
    """A revision label names no stored revision of the entry."""

    code = "revision_not_found"


class ResynthesisRequestNotFound(NotFound):
    """No resynthesis request has this ID."""

    code = "resynthesis_request_not_found"


class MemoryRevisionConflict(Conflict):
    """The entry moved past the revision a change was based on."""

    code = "memory_revision_conflict"


class MemoryMergeConflict(Conflict):
    """A merge of an entry already merged or archived, of an entry with itself, or forming a cycle."""

    code = "memory_merge_conflict"


class MemoryUpdateConflict(Conflict):
    """A state action outside its permitted prior state."""

    code = "memory_update_conflict"


class MemoryResynthesisConflict(Conflict):
    """A resynthesis request for an archived or merged entry, or while one is open."""

    code = "memory_resynthesis_conflict"


class MemoryAliasCycle(Conflict):
    """Following an entry's aliases loops."""

    code = "memory_alias_cycle"


__all__ += [
    "InvalidExpectedRevision",
    "InvalidMemory",
    "InvalidMemoryAction",
    "InvalidMemoryTarget",
    "InvalidRevision",
    "MemoryAliasCycle",
    "MemoryMergeConflict",
    "MemoryNotFound",
    "MemoryResynthesisConflict",
    "MemoryRevisionConflict",
    "MemoryTargetNotFound",
    "MemoryUpdateConflict",
    "ResynthesisRequestNotFound",
    "RevisionNotFound",
]
