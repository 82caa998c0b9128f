"""The one exception hierarchy of Roundtable: every error code a caller can see is a class here.

Every error carries a stable ``code`` (see ``docs/errors.md``) and a human-readable message; the
class decides both the code and the HTTP status, and the same code means the same thing on the
CLI, over MCP and over HTTP. :func:`error_body` builds the one JSON error body all three answer::

    class                         code                     HTTP
    RoundtableError               internal                 500
    ├── InvalidArgument           invalid_argument         400
    ├── NotFound                  not_found                404
    │   └── PatchVersionNotFound  patch_version_not_found  404
    ├── Forbidden                 forbidden                403
    ├── Unauthenticated           unauthenticated          401
    ├── Conflict                  conflict                 409
    ├── InvalidCitation           invalid_citation         400
    ├── UnsafePath                unsafe_path              400
    ├── ArtifactMismatch          artifact_mismatch        409
    ├── NotInitialized            not_initialized          400
    ├── MethodNotAllowed          method_not_allowed       405
    ├── DockerUnavailable         docker_unavailable       503
    ├── LaunchFailed              launch_failed            500
    ├── LaunchTimeout             launch_timeout           504
    ├── StoreBusy                 store_busy               503
    └── InternalError             internal                 500

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
    "Conflict",
    "DockerUnavailable",
    "Forbidden",
    "InternalError",
    "InvalidArgument",
    "InvalidCitation",
    "LaunchFailed",
    "LaunchTimeout",
    "MethodNotAllowed",
    "NotFound",
    "NotInitialized",
    "PatchVersionNotFound",
    "RoundtableError",
    "StoreBusy",
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

    def __init__(self, message: str, *, code: str | None = None, details: dict[str, Any] | None = None):
        super().__init__(message)
        self.message = message
        self.details = details or {}
        if code is not None and code != type(self).code:
            # Deprecated, kept only until the last ``code="..."`` literal (memory's) is a class:
            # the override shadows the class's code, so ``exc.code`` is always the code answered.
            vars(self)["code"] = code

    @property
    def instance_code(self) -> str:
        """Deprecated alias of :attr:`code` (they used to disagree)."""
        return self.code

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


class InternalError(RoundtableError):
    """An unexpected failure; the message never carries a traceback."""

    code = "internal"
    http_status = 500


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
