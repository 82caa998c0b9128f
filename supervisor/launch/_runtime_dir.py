"""Per-launch runtime directories: the socket and the token file a role container reads.

Layout (every path short, because a Unix socket path is limited to about 107 bytes)::

    <base>/                      0700, ours    $XDG_RUNTIME_DIR/roundtable, else /tmp/rt-<uid>
      <supervisor>/              0700, ours    the first 12 characters of the supervisor id
        <launch suffix>/         see below     mounted read-only in the container at /run/roundtable
          token                  see below     the grant's bearer token
          mcp.sock               see below     the launch's MCP socket (opened by the supervisor)

The container runs as ``10001:10001`` with every capability dropped, so it reads only what that user
may read. When the supervisor runs as root (the usual case for a Docker host), the launch directory
is owned by ``10001:10001`` with mode 0500, the token file is owned by ``10001`` with mode 0400 and the
socket by ``10001`` with mode 0600: only the container user (and root) can use them.

Without root the supervisor cannot hand files to uid 10001. The fallback keeps the private 0700 base
as the boundary against other host users, and opens the launch directory to the container through
the "other" bits: directory 0711 (enter, not list), token 0444, socket 0666. Inside the container
there is no other user to read them.

The directories never live under the project, and the whole launch directory is removed when the
launch ends (:meth:`LaunchRuntimeDir.remove`) or, after a crash, by the reaper
(:meth:`RuntimeRoot.sweep`); a supervisor that ends removes its ``<supervisor>`` directory when no
launch's is left in it (:meth:`RuntimeRoot.tidy`), as its owner lock removes its own directory, and a
peer of the same project that makes a directory just then makes it again. The token is written once
and never logged or kept in memory here.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import stat
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from store.errors import InternalError, InvalidArgument

__all__ = [
    "CONTAINER_GID",
    "CONTAINER_MOUNT",
    "CONTAINER_UID",
    "MAX_SOCKET_PATH_BYTES",
    "LaunchRuntimeDir",
    "RuntimeRoot",
    "default_runtime_base",
    "supervisor_id_for",
]

CONTAINER_UID = 10001
CONTAINER_GID = 10001
CONTAINER_MOUNT = "/run/roundtable"
TOKEN_FILE = "token"  # noqa: S105 (a file name, not a secret)
_FILE_NAME = re.compile(r"[a-z][a-z0-9_.-]{0,63}")
SOCKET_FILE = "mcp.sock"
MAX_SOCKET_PATH_BYTES = 107
_SUFFIX = re.compile(r"[0-9a-f]{12}")
_SUFFIX_LEN = 12


def supervisor_id_for(project_root: Path) -> str:
    """The stable id a project's supervisor labels its containers with (from the project's path)."""
    digest = hashlib.sha256(str(Path(project_root).resolve()).encode()).hexdigest()
    return f"rt{digest[:14]}"


def default_runtime_base() -> Path:
    """``$XDG_RUNTIME_DIR/roundtable`` when that directory exists, else ``/tmp/rt-<uid>``.

    ``/tmp`` rather than ``tempfile.gettempdir()``: ``$TMPDIR`` may be long (macOS, CI runners), and
    the socket path must stay short.
    """
    xdg = os.environ.get("XDG_RUNTIME_DIR", "")
    if xdg and os.path.isabs(xdg) and os.path.isdir(xdg):
        return Path(xdg) / "roundtable"
    return Path("/tmp") / f"rt-{os.geteuid()}"  # noqa: S108 (private 0700 dir, checked on every use)


def _running_as_root() -> bool:
    return os.geteuid() == 0


def _private_dir(path: Path) -> None:
    """Create ``path`` 0700 if missing; refuse a symlink or a directory another user owns."""
    with contextlib.suppress(FileExistsError):
        os.mkdir(path, 0o700)
    info = os.lstat(path)
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
        raise InternalError(f"runtime directory {path} is not a plain directory (a symlink?); refusing it")
    if info.st_uid != os.geteuid():
        raise InternalError(
            f"runtime directory {path} belongs to uid {info.st_uid}, not to this user ({os.geteuid()}); "
            "refusing it: remove it or set XDG_RUNTIME_DIR"
        )
    if stat.S_IMODE(info.st_mode) != 0o700:
        os.chmod(path, 0o700)


def launch_suffix(launch_id: str) -> str:
    """The short directory name of a launch: the random suffix of its ``L-...`` id."""
    tail = launch_id.rsplit("-", 1)[-1]
    if not _SUFFIX.fullmatch(tail):
        raise InvalidArgument(f"{launch_id!r} is not a launch id")
    return tail


@dataclass(frozen=True)
class LaunchRuntimeDir:
    """The runtime directory of one launch (host side); mount it read-only at :data:`CONTAINER_MOUNT`."""

    launch_id: str
    path: Path

    @property
    def token_path(self) -> Path:
        """Where the token file is on the host."""
        return self.path / TOKEN_FILE

    @property
    def socket_path(self) -> Path:
        """Where the supervisor binds the launch's socket."""
        return self.path / SOCKET_FILE

    @property
    def container_token_path(self) -> str:
        """The token file as the container sees it."""
        return f"{CONTAINER_MOUNT}/{TOKEN_FILE}"

    @property
    def container_socket_path(self) -> str:
        """The socket as the container sees it."""
        return f"{CONTAINER_MOUNT}/{SOCKET_FILE}"

    def write_token_file(self, token: str) -> Path:
        """Write the token, readable by the container user only (0400, uid 10001 as root)."""
        if not token or not token.isascii() or not token.isprintable():
            raise InvalidArgument("a token must be printable ASCII")
        return self.write_file(TOKEN_FILE, token.encode("ascii"))

    def write_file(self, name: str, data: bytes) -> Path:
        """Write one file the container reads (``name`` in the directory, created once), readable
        by the container user only (0400, uid 10001 as root; 0444 inside the private base otherwise)."""
        if not _FILE_NAME.fullmatch(name) or name == SOCKET_FILE:
            raise InvalidArgument(f"{name!r} is not a runtime file name")
        path = self.path / name
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(path, flags, 0o400)
        try:
            if _running_as_root():
                os.fchown(fd, CONTAINER_UID, CONTAINER_GID)
            else:
                os.fchmod(fd, 0o444)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        return path

    def make_fifo(self, name: str) -> Path:
        """Create FIFO ``name`` for a pooled container (:mod:`roles._claim`): the container user may
        open it both ways (0600, uid 10001 as root; 0666 inside the private base otherwise)."""
        if not _FILE_NAME.fullmatch(name) or name in (SOCKET_FILE, TOKEN_FILE):
            raise InvalidArgument(f"{name!r} is not a runtime file name")
        path = self.path / name
        os.mkfifo(path, 0o600)
        if _running_as_root():
            os.chown(path, CONTAINER_UID, CONTAINER_GID, follow_symlinks=False)
        else:
            os.chmod(path, 0o666)  # noqa: S103 (see the module docstring: the base is private)
        return path

    def container_path(self, name: str) -> str:
        """Where the container sees file ``name`` of this directory."""
        return f"{CONTAINER_MOUNT}/{name}"

    def grant_socket(self) -> Path:
        """Let the container user connect to the socket the supervisor has bound at :attr:`socket_path`."""
        if not stat.S_ISSOCK(os.lstat(self.socket_path).st_mode):
            raise InternalError(f"{self.socket_path} is not a socket")
        if _running_as_root():
            os.chown(self.socket_path, CONTAINER_UID, CONTAINER_GID)
            os.chmod(self.socket_path, 0o600)
        else:
            # Open to "other": the private base directory keeps other host users out (module docstring).
            os.chmod(self.socket_path, 0o666)  # noqa: S103
        return self.socket_path

    def remove(self) -> None:
        """Delete the directory and everything in it; nothing to do when it is gone already."""
        _remove_tree(self.path)


def _remove_tree(path: Path) -> None:
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(info.st_mode):
        shutil.rmtree(path, onerror=_ignore_vanished)
    else:
        os.unlink(path)


def _ignore_vanished(
    function: object, path: str, excinfo: tuple[type[BaseException], BaseException, object]
) -> None:
    # The launch socket's server unlinks its own socket when it stops, and in a long-running
    # supervisor it stops in the background, concurrently with this removal: an entry gone between
    # listing and unlinking is removed already. Anything else is a real failure.
    if not isinstance(excinfo[1], FileNotFoundError):
        raise excinfo[1]


_ATTEMPTS = 3
"""How many times a directory is made again when a peer tidied it away meanwhile."""
_T = TypeVar("_T")


def made_in_directory(ensure: Callable[[], object], make: Callable[[], _T]) -> _T:
    """``make()`` (create something in a directory) after ``ensure()`` (create the directory), the
    two again when another supervisor of this project ended and tidied the directory away between
    them (:meth:`RuntimeRoot.tidy`, :meth:`~supervisor.launch._ownership.OwnerLock.release`)."""
    for _ in range(_ATTEMPTS - 1):
        ensure()
        try:
            return make()
        except FileNotFoundError:
            continue
    ensure()
    return make()


class RuntimeRoot:
    """The runtime directories of one supervisor (see the module docstring for the layout)."""

    def __init__(self, supervisor_id: str, *, base: Path | None = None):
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", supervisor_id):
            raise InvalidArgument(f"supervisor id {supervisor_id!r} is not a plain name")
        self.base = Path(base) if base is not None else default_runtime_base()
        if not self.base.is_absolute():
            raise InvalidArgument(f"the runtime base {self.base} must be an absolute path")
        self.path = self.base / supervisor_id[:12]
        longest = self.path / ("x" * _SUFFIX_LEN) / SOCKET_FILE
        if len(os.fsencode(longest)) > MAX_SOCKET_PATH_BYTES:
            raise InvalidArgument(
                f"runtime directory {self.path} is too long for a Unix socket path "
                f"({len(os.fsencode(longest))} > {MAX_SOCKET_PATH_BYTES} bytes); set XDG_RUNTIME_DIR to a "
                "shorter directory"
            )

    def ensure(self) -> Path:
        """Create the private base and supervisor directories (0700, ours) and return the latter."""
        self.base.parent.mkdir(parents=True, exist_ok=True)
        _private_dir(self.base)
        _private_dir(self.path)
        return self.path

    def create(self, launch_id: str) -> LaunchRuntimeDir:
        """A fresh, empty runtime directory for ``launch_id``, owned as the module docstring says."""
        path = self.path / launch_suffix(launch_id)
        # A leftover with this random name would be a bug: let FileExistsError raise.
        made_in_directory(self.ensure, lambda: os.mkdir(path, 0o700))
        if _running_as_root():
            os.chown(path, CONTAINER_UID, CONTAINER_GID)
            os.chmod(path, 0o500)
        else:
            os.chmod(path, 0o711)  # noqa: S103 (see the module docstring: the base is private)
        return LaunchRuntimeDir(launch_id, path)

    def tidy(self) -> None:
        """Remove this supervisor's directory if no launch's directory is left in it (a supervisor
        that ends leaves nothing behind; a launch still finishing, or another supervisor's, keeps it)."""
        with contextlib.suppress(OSError):  # not empty, or gone already
            os.rmdir(self.path)

    def sweep(self, keep: Collection[str] = ()) -> list[str]:
        """Remove the directory of every launch not in ``keep``; return the removed names."""
        if not self.path.is_dir():
            return []
        kept = {launch_suffix(launch_id) for launch_id in keep}
        removed: list[str] = []
        for entry in sorted(self.path.iterdir()):
            if entry.name not in kept:
                _remove_tree(entry)
                removed.append(entry.name)
        return removed
