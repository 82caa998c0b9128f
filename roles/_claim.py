"""A pooled role container's wait for its launch: ready, then blocked until the supervisor claims it.

``roundtable serve`` keeps a warm pool of role containers started before any launch exists. Such a
container's runtime directory (read-only at ``/run/roundtable``) holds only two FIFOs, no token and
no socket: :data:`READY_FIFO` and :data:`GO_FIFO`. :func:`wait_for_claim`, called first thing by the
runner, sees the go FIFO, imports what the runner will need (its MCP client and the configured
provider: the costly part of a start), says ``ready`` on the ready FIFO and blocks reading the go
FIFO. The supervisor holds both FIFOs open read-write, so neither open blocks and the read waits
for data without polling. When a launch claims the container, the supervisor writes the token, binds
the socket in the same directory and then writes :data:`GO_LINE`; the runner goes on as any launch.

A FIFO is a special file: writing to it is allowed on a read-only mount, and it carries nothing but
the two lines. A container whose directory has no go FIFO (a cold launch) returns at once.
"""

from __future__ import annotations

import importlib
import os
import stat
import sys
from pathlib import Path

__all__ = ["GO_FIFO", "GO_LINE", "READY_FIFO", "READY_LINE", "wait_for_claim"]

GO_FIFO = "go"
READY_FIFO = "ready"
GO_LINE = b"go\n"
READY_LINE = b"ready\n"
_DEFAULT_CHANNEL_DIR = "/run/roundtable"
# What the runner imports once it runs: loaded while the container waits, not after the claim. Only
# the configured provider's (ROUNDTABLE_PROVIDER, as the runner reads it): a judge launch never loads
# the model gateway's HTTP client, the costliest import of all.
_WARM_MODULES = (
    "roles._mcp_http",
    "roles._unix_http",
    "roles.channel",
    "roles.tools",
    "roles.providers.openai",  # the runner's _run imports its GatewayRefused whatever the provider
)
_EVENT_LOOP = (
    "anyio._core._sockets",  # what connecting to the socket loads (the names may move: best effort)
    "anyio._backends._asyncio",  # what the first anyio.run loads: asyncio and anyio's backend
    "queue",
)
"""Only for a provider that runs on the event loop: the others run without one (roles._blocking)."""
_PROVIDER_MODULES = {
    "judge": ("roles.providers.judge", "roles._blocking"),
    "lexical": ("roles.providers.checks_step", "roles.providers.lexical", "roles._blocking"),
    "openai": ("roles.providers.checks_step", "roles.gateway", *_EVENT_LOOP),
}


def _warm_modules() -> tuple[str, ...]:
    provider = os.environ.get("ROUNDTABLE_PROVIDER", "judge")
    every = tuple(name for names in _PROVIDER_MODULES.values() for name in names)
    return _WARM_MODULES + _PROVIDER_MODULES.get(provider, every)


def _is_fifo(path: Path) -> bool:
    try:
        return stat.S_ISFIFO(os.lstat(path).st_mode)
    except OSError:
        return False


def wait_for_claim(channel: Path | None = None) -> bool:
    """Wait for the claim if this container is pooled (see the module docstring); True if it was.

    Exits with status 2 (no launch channel) when the supervisor closes the go FIFO without a claim.
    """
    channel = channel or Path(os.environ.get("ROUNDTABLE_CHANNEL_DIR", _DEFAULT_CHANNEL_DIR))
    go = channel / GO_FIFO
    if not _is_fifo(go):
        return False
    for name in _warm_modules():
        try:
            importlib.import_module(name)
        except ImportError:
            continue
    ready = channel / READY_FIFO
    if _is_fifo(ready):
        fd = os.open(ready, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        try:
            os.write(fd, READY_LINE)
        finally:
            os.close(fd)
    with open(go, "rb", buffering=0) as fifo:
        line = fifo.readline()
    if line != GO_LINE:
        print("roles.runner: no launch channel: the pool closed without a claim", file=sys.stderr)
        raise SystemExit(2)
    return True
