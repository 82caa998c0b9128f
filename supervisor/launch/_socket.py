"""The launch's MCP socket: served for the launch's life, and stopped in the background if it can be.

:func:`launch_socket` serves a launch's application (a
:class:`~capabilities.serving.LaunchSocketApp`) on its Unix socket with the lean server for the
duration of an ``async with`` block. Given a background task group (a long-running supervisor's),
the server runs there and is only told to stop when the block ends, so the launch can answer while
the server winds down; the grant the socket accepts is revoked by then, so nothing can use it in
the meantime.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import anyio.abc

if TYPE_CHECKING:
    from capabilities.serving import LaunchSocketApp

__all__ = ["launch_socket"]


async def _serve_until(
    app: LaunchSocketApp, path: Path, stop: anyio.Event, *, task_status: anyio.abc.TaskStatus[None]
) -> None:
    from capabilities.serving import serve_launch_socket  # the server, only for a supervisor that launches

    async with serve_launch_socket(app, path):
        task_status.started()
        await stop.wait()


@asynccontextmanager
async def launch_socket(
    app: LaunchSocketApp, path: Path, background: anyio.abc.TaskGroup | None = None
) -> AsyncIterator[None]:
    """Serve ``app`` on ``path`` for the block; stopped after it, in ``background`` when given."""
    if background is None:
        from capabilities.serving import serve_launch_socket

        async with serve_launch_socket(app, path):
            yield
        return
    stop = anyio.Event()
    await background.start(partial(_serve_until, app, path, stop))
    try:
        yield
    finally:
        stop.set()
