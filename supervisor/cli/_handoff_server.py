"""The serve's side of the hand-off (:mod:`supervisor.cli._handoff`): launches for local commands.

:func:`handoff_listener` listens on a Unix socket in the operator's private runtime directory (mode
0600), announces it in ``.roundtable/serve.json`` (0600, written whole by a rename) and removes both
when it stops. Each connection is served only if its peer runs as this user (``SO_PEERCRED``). It
runs one operation on the serve's supervisor, with its warm pool, and streams its progress and its
answer back; the peer closing the connection cancels the operation.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import struct
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import structlog
from anyio.streams.buffered import BufferedByteReceiveStream

from store import parse_json
from store.errors import Forbidden, InternalError, InvalidArgument, RoundtableError, error_body
from supervisor._supervisor import Supervisor
from supervisor.cli._handoff import SERVE_FILE
from supervisor.launch import PhaseReporter

__all__ = ["OPERATIONS", "handoff_listener"]

_log = structlog.get_logger("roundtable.handoff")
_MAX_REQUEST = 64 * 1024

Operation = Callable[[Supervisor, dict[str, Any], PhaseReporter], Awaitable[dict[str, Any]]]


def _text(args: dict[str, Any], name: str, *, optional: bool = False) -> str | None:
    value = args.get(name)
    if value is None and optional:
        return None
    if not isinstance(value, str) or not value:
        raise InvalidArgument(f"{name} must be a non-empty string")
    return value


async def _oracle_launch(
    supervisor: Supervisor, args: dict[str, Any], on_phase: PhaseReporter
) -> dict[str, Any]:
    timeout = args.get("timeout")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, int | float)):
        raise InvalidArgument("timeout must be a number of seconds")
    from supervisor.cli.commands import cited_warnings

    result = await supervisor.launch_role(
        "memory_oracle",
        str(_text(args, "proposal_id")),
        provider=_text(args, "provider", optional=True),
        timeout=timeout,
        on_phase=on_phase,
    )
    body = result.to_dict()
    store = supervisor.store
    body["warnings"] = await store.db.run(cited_warnings, store, body["warnings"])
    return body


async def _review_run(
    supervisor: Supervisor, args: dict[str, Any], on_phase: PhaseReporter
) -> dict[str, Any]:
    from supervisor.review import run_review

    run = await run_review(supervisor, str(_text(args, "proposal_id")), on_phase=on_phase)
    return run.to_dict()


async def _pool_ready(
    supervisor: Supervisor, args: dict[str, Any], on_phase: PhaseReporter
) -> dict[str, Any]:
    """Wait until the warm pool's unclaimed containers are ready: ``{"size", "ready"}``."""
    pool = supervisor.pool
    if pool is None:
        return {"size": 0, "ready": 0}
    return {"size": pool.size, "ready": await pool.until_ready()}


OPERATIONS: dict[str, Operation] = {
    "oracle.launch": _oracle_launch,
    "review.run": _review_run,
    "pool.ready": _pool_ready,
}
"""What a local command may hand to the serve, by name."""


async def _accept(supervisor: Supervisor, args: dict[str, Any]) -> None:
    """Resolve the request's proposal (an ID or a unique prefix of one, as the command takes it) before
    the request is accepted: an unknown one is answered as the in-process command answers it."""
    if "proposal_id" in args:
        from supervisor.cli._project import resolve_id

        value = str(_text(args, "proposal_id"))
        args["proposal_id"] = await anyio.to_thread.run_sync(resolve_id, supervisor.store, "proposal", value)


def _peer_uid(stream: anyio.abc.SocketStream) -> int:
    raw: socket.socket = stream.extra(anyio.abc.SocketAttribute.raw_socket)  # noqa: S610 (anyio, not Django)
    creds = raw.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", creds)
    return int(uid)


async def _serve_one(supervisor: Supervisor, stream: anyio.abc.SocketStream) -> None:
    """Answer one connection; whatever goes wrong with it is logged, never lets the service fall."""
    try:
        await _answer(supervisor, stream)
    except Exception:
        # A peer that vanished, or a bug in one request, must not take down ``roundtable serve``
        # (the listener's task group would otherwise end the whole service).
        _log.exception("handoff_connection_failed")


async def _answer(supervisor: Supervisor, stream: anyio.abc.SocketStream) -> None:
    async with stream:

        async def send(message: dict[str, Any]) -> None:
            with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                await stream.send(json.dumps(message, default=str).encode() + b"\n")

        if _peer_uid(stream) != os.geteuid():
            await send(error_body(Forbidden("the hand-off socket serves its own user only")))
            return
        reader = BufferedByteReceiveStream(stream)
        try:
            request = parse_json("the hand-off request", await reader.receive_until(b"\n", _MAX_REQUEST))
            if not isinstance(request, dict):
                raise InvalidArgument("the hand-off request is not a JSON object")
            operation = OPERATIONS.get(str(request.get("op")))
            args = request.get("args")
            if operation is None or not isinstance(args, dict):
                raise InvalidArgument(f"unknown hand-off operation {request.get('op')!r}")
        except (ValueError, AttributeError, anyio.IncompleteRead, anyio.DelimiterNotFound) as exc:
            await send(error_body(InvalidArgument(f"not a hand-off request: {exc}")))
            return
        except RoundtableError as exc:
            await send(error_body(exc))
            return
        try:
            await _accept(supervisor, args)
        except RoundtableError as exc:
            await send(error_body(exc))
            return
        await send({"accepted": True})

        async def report(phase: str, details: dict[str, Any]) -> None:
            await send({"phase": phase, "details": details})

        async with anyio.create_task_group() as group:

            async def cancel_when_the_peer_leaves() -> None:
                with contextlib.suppress(Exception):
                    await reader.receive()  # the peer sends nothing more: data or EOF both end it
                _log.warning("handoff_peer_left", op=request["op"])
                group.cancel_scope.cancel()

            group.start_soon(cancel_when_the_peer_leaves)
            try:
                answer: dict[str, Any] = {"result": await operation(supervisor, args, report)}
            except RoundtableError as exc:
                answer = error_body(exc)
            except Exception as exc:
                _log.exception("handoff_failed", op=request["op"])
                answer = error_body(
                    InternalError(f"unexpected error in roundtable serve: {type(exc).__name__}")
                )
            await send(answer)
            group.cancel_scope.cancel()


@asynccontextmanager
async def handoff_listener(supervisor: Supervisor) -> AsyncIterator[Path]:
    """Serve hand-offs on ``supervisor`` for the duration of the block; yields the socket's path."""
    socket_path = supervisor.runtime.base / f"{supervisor.supervisor_id[:12]}.handoff.sock"
    await anyio.to_thread.run_sync(supervisor.runtime.ensure)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(socket_path)  # ours (the private base): a previous serve of this project's
    listener = await anyio.create_unix_listener(socket_path, mode=0o600)
    file = supervisor.store.paths.state_dir / SERVE_FILE
    async with listener, anyio.create_task_group() as group:
        group.start_soon(listener.serve, lambda stream: _serve_one(supervisor, stream))
        _announce(file, socket_path)
        try:
            yield socket_path
        finally:
            _withdraw(file, socket_path)
            group.cancel_scope.cancel()


def _announce(file: Path, socket_path: Path) -> None:
    """Write the serve file whole (0600), by a rename over any earlier one."""
    body = json.dumps({"socket": str(socket_path), "pid": os.getpid()}).encode()
    temporary = file.with_name(f".{file.name}.{os.getpid()}")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, body)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(temporary, file)


def _withdraw(file: Path, socket_path: Path) -> None:
    """Remove the serve file if it still names this socket, and the socket."""
    with contextlib.suppress(OSError, ValueError, KeyError):
        if json.loads(file.read_text(encoding="utf-8"))["socket"] == str(socket_path):
            file.unlink()
    with contextlib.suppress(OSError):
        os.unlink(socket_path)
