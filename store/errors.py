"""The one exception hierarchy of Roundtable: every error code a caller can see is a class here.

Every error carries a stable ``code`` (see ``docs/errors.md``) and a human-readable message; the
class decides both the code and the HTTP status, and the same code means the same thing on the
CLI, over MCP and over HTTP. :func:`error_body` builds the one JSON error body all three answer::

    class                               code                           HTTP
    RoundtableError                     internal                       500
    ├── InvalidArgument                 invalid_argument               400
    │   ├── InvalidMemory               invalid_memory                 400
    │   ├── InvalidRevision             invalid_revision               400
    │   ├── InvalidExpectedRevision     invalid_expected_revision      400
    │   ├── InvalidMemoryTarget         invalid_memory_target          400
    │   └── InvalidMemoryAction         invalid_memory_action          400
    ├── NotFound                        not_found                      404
    │   ├── PatchVersionNotFound        patch_version_not_found        404
    │   ├── MemoryNotFound              memory_not_found               404
    │   ├── MemoryTargetNotFound        memory_target_not_found        404
    │   ├── RevisionNotFound            revision_not_found             404
    │   └── ResynthesisRequestNotFound  resynthesis_request_not_found  404
    ├── Forbidden                       forbidden                      403
    ├── Unauthenticated                 unauthenticated                401
    ├── Conflict                        conflict                       409
    │   ├── MemoryRevisionConflict      memory_revision_conflict       409
    │   ├── MemoryMergeConflict         memory_merge_conflict          409
    │   ├── MemoryUpdateConflict        memory_update_conflict         409
    │   ├── MemoryResynthesisConflict   memory_resynthesis_conflict    409
    │   └── MemoryAliasCycle            memory_alias_cycle             409
    ├── InvalidCitation                 invalid_citation               400
    ├── UnsafePath                      unsafe_path                    400
    ├── ArtifactMismatch                artifact_mismatch              409
    ├── NotInitialized                  not_initialized                400
    ├── MethodNotAllowed                method_not_allowed             405
    ├── DockerUnavailable               docker_unavailable             503
    ├── LaunchFailed                    launch_failed                  500
    ├── LaunchTimeout                   launch_timeout                 504
    ├── StoreBusy                       store_busy                     503
    ├── StoreUnavailable                store_unavailable              503
    ├── InternalError                   internal                       500
    ├── ModelUnavailable                model_unavailable              502
    ├── ModelError                      model_error                    502
    └── BudgetExhausted                 budget_exhausted               429

(:func:`hierarchy` draws this tree from the classes; a test keeps the two equal.) Code elsewhere
may refine a class (``supervisor.image.ImageBuildError`` is an :class:`InternalError`) but never
invents a code: a new code is a new class here and a row in ``docs/errors.md``.

Errors from third-party libraries are translated at the boundary that calls them and chained with
``raise ... from``: ``sqlite3`` in :class:`store.db.Database`, the Docker SDK and ``requests`` in
``supervisor.docker.DockerClient``. A caller never sees a ``sqlite3`` or ``docker`` exception.
"""

from __future__ import annotations

from typing import Any, ClassVar

__all__ = [
    "ArtifactMismatch",
    "BudgetExhausted",
    "Conflict",
    "DockerUnavailable",
    "Forbidden",
    "InternalError",
    "InvalidArgument",
    "InvalidCitation",
    "LaunchFailed",
    "LaunchTimeout",
    "MethodNotAllowed",
    "ModelError",
    "ModelUnavailable",
    "NotFound",
    "NotInitialized",
    "PatchVersionNotFound",
    "RoundtableError",
    "StoreBusy",
    "StoreUnavailable",
    "Unauthenticated",
    "UnsafePath",
    "error_body",
    "error_classes",
    "hierarchy",
]


class RoundtableError(Exception):
    """Root of every error Roundtable reports to a caller; ``code`` and ``http_status`` are its class's."""

    code: ClassVar[str] = "internal"
    http_status: ClassVar[int] = 500

    def __init__(self, message: str, *, details: dict[str, Any] | None = None):
        super().__init__(message)
        self.message = message
        self.details = details or {}

    def to_dict(self) -> dict[str, Any]:
        """The inside of the error body: ``{"code", "message"}`` plus ``details`` when present."""
        body: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.details:
            body["details"] = self.details
        return body


def error_body(exc: RoundtableError) -> dict[str, Any]:
    """The one JSON error body of every surface: ``{"error": {"code", "message"[, "details"]}}``."""
    return {"error": exc.to_dict()}


class InvalidArgument(RoundtableError):
    """An argument is missing, of the wrong type, blank, too large or otherwise unacceptable."""

    code = "invalid_argument"
    http_status = 400


class NotFound(RoundtableError):
    """The named object does not exist."""

    code = "not_found"
    http_status = 404


class PatchVersionNotFound(NotFound):
    """The proposal exists but has no patch version of that number (``GET .../patch?version=N``)."""

    code = "patch_version_not_found"


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


class MethodNotAllowed(RoundtableError):
    """The HTTP path exists but not with this method."""

    code = "method_not_allowed"
    http_status = 405


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


class StoreBusy(RoundtableError):
    """Another process held the database's write lock past every retry; the request changed nothing."""

    code = "store_busy"
    http_status = 503


class StoreUnavailable(RoundtableError):
    """The configured database server cannot be reached, or refused our credentials; nothing changed."""

    code = "store_unavailable"
    http_status = 503


class InternalError(RoundtableError):
    """An unexpected failure; the message never carries a traceback."""

    code = "internal"
    http_status = 500


# Model gateway codes: why the supervisor's model gateway refused a role's request. A launch whose
# provider met one of these ends ``failed`` with the code as its ``reason``.


class ModelUnavailable(RoundtableError):
    """The model server could not be reached (connection refused, unreachable, timed out)."""

    code = "model_unavailable"
    http_status = 502


class ModelError(RoundtableError):
    """The model server answered, but not with a chat completion (a non-200 status or a bad body)."""

    code = "model_error"
    http_status = 502


class BudgetExhausted(RoundtableError):
    """The launch's token budget or model turn limit is spent; no further request goes upstream."""

    code = "budget_exhausted"
    http_status = 429


def error_classes() -> list[type[RoundtableError]]:
    """Every class of this module's hierarchy, root first, each before its subclasses."""
    found: list[type[RoundtableError]] = []

    def walk(cls: type[RoundtableError]) -> None:
        if cls.__module__ == __name__:
            found.append(cls)
            for sub in cls.__subclasses__():
                walk(sub)

    walk(RoundtableError)
    return found


def hierarchy() -> str:
    """The hierarchy as the tree drawn in this module's docstring: class, code, HTTP status."""
    rows: list[tuple[str, type[RoundtableError]]] = [("", RoundtableError)]

    def walk(cls: type[RoundtableError], indent: str) -> None:
        subs = [sub for sub in cls.__subclasses__() if sub.__module__ == __name__]
        for index, sub in enumerate(subs):
            last = index == len(subs) - 1
            rows.append((indent + ("└── " if last else "├── "), sub))
            walk(sub, indent + ("    " if last else "│   "))

    walk(RoundtableError, "")
    names = [prefix + cls.__name__ for prefix, cls in rows]
    name_width = max(len(name) for name in names) + 2
    code_width = max(len(cls.code) for _, cls in rows) + 2
    lines = [f"{'class':<{name_width}}{'code':<{code_width}}HTTP"]
    lines += [
        f"{name:<{name_width}}{cls.code:<{code_width}}{cls.http_status}"
        for name, (_, cls) in zip(names, rows, strict=True)
    ]
    return "\n".join(lines)


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
