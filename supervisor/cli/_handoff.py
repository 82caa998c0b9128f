"""Handing a launch to the ``roundtable serve`` running on the same project, when there is one.

A running ``serve`` keeps a supervisor started, with its warm pool; a command that launches
(``oracle launch --wait``, ``review run --wait``) asks it to run the launch instead of starting a
supervisor of its own, and answers exactly as it would have (same result, same structured errors,
same progress lines, one more at the start: ``handed_off``). The serve announces itself in
:data:`SERVE_FILE` under ``.roundtable/`` (mode 0600), which names a Unix socket in the operator's
private runtime directory; this module is the client side, and imports nothing heavy.

The command trusts the file and the socket only when both belong to this user and nobody else may
use them (the file 0600, the socket not open to group or others, neither a symlink); otherwise it
says so on stderr and runs the launch itself. A file whose socket nobody listens on is left by a serve
that died: it is removed, and the command runs the launch itself. The serve, for its part, serves
only peers of its own user (``SO_PEERCRED``).

The protocol is JSON lines: one request ``{"op", "args"}``; then ``{"accepted": true}`` once the serve
has taken it (its proposal found, a prefix resolved: the ``handed_off`` line is printed then, so an
unknown proposal answers exactly as in-process), ``{"phase", "details"}`` lines as the launch
progresses and one ``{"result": ...}`` or ``{"error": {"code", "message"}}`` line. Closing the
connection cancels the launch.

This module imports only the standard library's light modules (the store's errors when an error is
raised): :mod:`supervisor.cli._quick` hands a launch off through it before anything else is imported.
"""

from __future__ import annotations

import _socket  # socket.py's C core: socket.py itself costs ~4 ms to import (its enums)
import contextlib
import errno
import json
import os
import stat
import struct
import sys

TYPE_CHECKING = False  # typing's flag without importing typing: see supervisor.cli._quick
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import Any

    PathLike = str | os.PathLike[str]
    Reporter = Callable[[str, dict[str, Any]], None]

__all__ = [
    "SERVE_FILE",
    "STATE_DIR",
    "HandoffBroken",
    "HandoffTarget",
    "connect",
    "exchange",
    "find_serve",
    "hand_off",
    "raise_error_body",
    "state_dir_of",
]

SERVE_FILE = "serve.json"
"""The file under ``.roundtable/`` naming the serve's hand-off socket."""
STATE_DIR = ".roundtable"
"""``store``'s state directory name, repeated: finding it must not import the store's configuration."""
_MAX_LINE = 16 * 1024 * 1024


class HandoffBroken(Exception):
    """The serve broke the protocol or the connection mid-launch (an ``internal`` error to the user)."""


class HandoffTarget:
    """A live serve's hand-off socket, as its file named it (paths as strings: this module does
    without :mod:`pathlib`, which would import ``urllib.parse``, ``fnmatch`` and ``ipaddress``)."""

    def __init__(self, file: str, socket_path: str, pid: int):
        self.file = file
        self.socket_path = socket_path
        self.pid = pid


def _private(path: str, kind: int, what: str, info: os.stat_result | None = None) -> str | None:
    """Why ``path`` may not be trusted (None when it may): a ``kind`` file of ours, no group/other bits
    (``info``: its status, when already taken from an opened descriptor)."""
    info = info or os.lstat(path)
    if stat.S_IFMT(info.st_mode) != kind:
        return f"{what} {path} is not a {'socket' if kind == stat.S_IFSOCK else 'regular file'}"
    if info.st_uid != os.geteuid():
        return f"{what} {path} belongs to uid {info.st_uid}, not to this user"
    if stat.S_IMODE(info.st_mode) & 0o077:
        return f"{what} {path} has mode {stat.S_IMODE(info.st_mode):04o}; it must be private (0600)"
    return None


def state_dir_of(root: PathLike | None) -> str | None:
    """The ``.roundtable`` directory of the project at ``root`` (else found from the working
    directory up, as the store finds it), or None when there is none (the command then fails as
    usual, in-process)."""
    if root is not None:
        candidate = os.path.join(os.path.realpath(root), STATE_DIR)
        return candidate if os.path.isdir(candidate) else None
    directory = os.path.realpath(os.getcwd())
    while True:
        candidate = os.path.join(directory, STATE_DIR)
        if os.path.isdir(candidate):
            return candidate
        parent = os.path.dirname(directory)
        if parent == directory:  # the root: searched it already
            return None
        directory = parent


def find_serve(state_dir: PathLike, *, warn: Callable[[str], None] | None = None) -> HandoffTarget | None:
    """The serve announced in ``state_dir``, or None: no file, an untrusted one (``warn`` says why),
    or a stale one (removed)."""
    warn = warn or _stderr
    file = os.path.join(state_dir, SERVE_FILE)
    try:
        announced, problem = _read_private(file)
        if problem is None:
            socket_path = str(announced["socket"])
            pid = int(announced["pid"])
            problem = _private(socket_path, stat.S_IFSOCK, "the hand-off socket")
    except FileNotFoundError:
        if not os.path.exists(file):
            return None
        _remove_stale(file, None)  # the file names a socket that is gone: its serve died
        return None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        warn(f"ignoring {file}: {exc}; running the launch in this process")
        return None
    if problem is not None:
        warn(f"not handing the launch to roundtable serve: {problem}; running it in this process")
        return None
    return HandoffTarget(file, socket_path, pid)


def _read_private(file: str) -> tuple[Any, str | None]:
    """The serve file's JSON, read from a descriptor opened without following a link and checked
    (owner, mode, kind) on that descriptor, so what is read is what was checked."""
    try:
        fd = os.open(file, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno != errno.ELOOP:
            raise
        return None, f"the serve file {file} is not a regular file"
    try:
        problem = _private(file, stat.S_IFREG, "the serve file", os.fstat(fd))
        if problem is not None:
            return None, problem
        with os.fdopen(os.dup(fd), "rb") as handle:
            return json.loads(handle.read(_MAX_LINE)), None
    finally:
        os.close(fd)


def _stderr(message: str) -> None:
    sys.stderr.write(f"roundtable: {message}\n")
    sys.stderr.flush()


def _remove_stale(file: str, socket_path: str | None) -> None:
    """Remove a dead serve's file, unless a new serve has replaced it meanwhile."""
    with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
        announced, problem = _read_private(file)
        if problem is not None:
            return
        named = str(announced["socket"])
        if socket_path is None and os.path.exists(named):
            return
        if socket_path is not None and named != socket_path:
            return
        os.unlink(file)


def connect(target: HandoffTarget) -> _socket.socket | None:
    """A connection to ``target``'s serve, checked; None when nobody listens (the stale file is
    removed) or the peer is not the announced serve (said on stderr)."""
    return _connect(target)


def _connect(target: HandoffTarget) -> _socket.socket | None:
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.connect(target.socket_path)
    except (ConnectionRefusedError, FileNotFoundError):
        sock.close()
        _remove_stale(target.file, target.socket_path)  # nobody listens: a serve that died left it
        return None
    except OSError:
        sock.close()
        raise
    # The path was checked before the connect; the peer is checked after it: whatever sits at that
    # path by then, only the announced serve, running as this user, gets the launch.
    problem = _peer_problem(sock, target)
    if problem is not None:
        sock.close()
        _stderr(f"not handing the launch to roundtable serve: {problem}; running it in this process")
        return None
    return sock


def _peer_problem(sock: _socket.socket, target: HandoffTarget) -> str | None:
    """Why the process at the other end of ``sock`` is not the serve ``target`` announces, or None."""
    creds = sock.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, struct.calcsize("3i"))
    pid, uid, _gid = struct.unpack("3i", creds)
    if uid != os.geteuid():
        return f"the hand-off socket is served by uid {uid}, not this user"
    if pid != target.pid:
        return f"the hand-off socket is served by pid {pid}, not the announced serve (pid {target.pid})"
    return None


def raise_error_body(body: dict[str, Any]) -> None:
    """Raise the :class:`RoundtableError` an ``{"code", "message"[, "details"]}`` body describes."""
    from store.errors import InternalError, error_classes

    code = str(body.get("code", "internal"))
    by_code = {cls.code: cls for cls in error_classes()}
    cls = by_code.get(code, InternalError)
    error = cls(str(body.get("message", "")), details=body.get("details") or None)
    raise error


def exchange(
    sock: _socket.socket, target: HandoffTarget, op: str, args: dict[str, Any], on_phase: Reporter
) -> tuple[bool, dict[str, Any]]:
    """Send ``op`` on ``sock`` and follow it to its end: ``(True, result)`` or ``(False, error body)``.

    ``on_phase`` receives ``handed_off`` once the serve accepts the request, then every phase it
    reports; :class:`HandoffBroken` when the serve breaks the protocol or the connection."""
    try:
        sock.sendall(json.dumps({"op": op, "args": args}).encode() + b"\n")
        for line in _lines(sock):
            try:
                message = json.loads(line)
            except (ValueError, RecursionError):
                raise HandoffBroken(
                    f"roundtable serve answered a line that is not JSON: {line[:200]!r}"
                ) from None
            if not isinstance(message, dict):
                raise HandoffBroken(f"roundtable serve answered an unknown line: {line[:200]!r}")
            if "accepted" in message:
                on_phase("handed_off", {"serve_pid": target.pid})
            elif "phase" in message:
                on_phase(str(message["phase"]), dict(message.get("details") or {}))
            elif "result" in message:
                return True, dict(message["result"])
            elif "error" in message and isinstance(message["error"], dict):
                return False, message["error"]
            else:
                raise HandoffBroken(f"roundtable serve answered an unknown line: {line[:200]!r}")
        raise HandoffBroken(f"roundtable serve (pid {target.pid}) closed the hand-off mid-launch")
    finally:
        sock.close()


def _lines(sock: _socket.socket) -> Iterator[bytes]:
    """The lines ``sock`` receives, each with its newline, until it closes (a last line without
    one included); a line past :data:`_MAX_LINE` bytes is cut there, and so is not JSON."""
    buffer = bytearray()
    while True:
        end = buffer.find(b"\n")
        if end < 0 and len(buffer) < _MAX_LINE:
            chunk = sock.recv(65536)
            if chunk:
                buffer += chunk
                continue
            if buffer:
                yield bytes(buffer)
            return
        cut = min(end + 1 if end >= 0 else _MAX_LINE, _MAX_LINE)
        yield bytes(buffer[:cut])
        del buffer[:cut]


def hand_off(
    state_dir: PathLike | None,
    op: str,
    args: dict[str, Any],
    on_phase: Reporter,
    *,
    on_found: Callable[[], None] | None = None,
) -> dict[str, Any] | None:
    """Run ``op`` on the serve of ``state_dir`` and return its result; None when no serve runs there.

    ``on_phase`` receives ``handed_off`` first, then every phase the serve reports; an error the serve
    answers is raised here as itself (the same code and message as in-process). ``on_found`` runs
    once a serve has answered the connection, before the hand-off (what the command started for an
    in-process run, it can let go of then)."""
    target = None if state_dir is None else find_serve(state_dir)
    if target is None:
        return None
    sock = _connect(target)
    if sock is None:
        return None
    if on_found is not None:
        on_found()
    try:
        done, body = exchange(sock, target, op, args, on_phase)
    except HandoffBroken as exc:
        from store.errors import InternalError

        raise InternalError(str(exc)) from None
    if not done:
        raise_error_body(body)
    return body
