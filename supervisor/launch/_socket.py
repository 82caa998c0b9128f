"""The launch's MCP socket: served for the launch's life, and stopped in the background if it can be.

:func:`launch_socket` serves a launch's application on its Unix socket for the duration of an
``async with`` block. Given a background task group (a long-running supervisor's), the server runs
there and is only told to stop when the block ends, so the launch can answer while uvicorn winds
down; the grant the socket accepts is revoked by then, so nothing can use it in the meantime.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import anyio.abc

__all__ = ["launch_socket"]


async def _serve_until(
    app: Any, path: Path, stop: anyio.Event, *, task_status: anyio.abc.TaskStatus[None]
) -> None:
    from capabilities.serving import serving  # the servers, only for a supervisor that launches

    async with serving(app, uds=path):
        task_status.started()
        await stop.wait()


@asynccontextmanager
async def launch_socket(
    app: Any, path: Path, background: anyio.abc.TaskGroup | None = None
) -> AsyncIterator[None]:
    """Serve ``app`` on ``path`` for the block; stopped after it, in ``background`` when given."""
    if background is None:
        from capabilities.serving import serving

        async with serving(app, uds=path):
            yield
        return
    stop = anyio.Event()
    await background.start(partial(_serve_until, app, path, stop))
    try:
        yield
    finally:
        stop.set()
