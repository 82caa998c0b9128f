"""Opening a project for a command: root discovery, the store, the services.

The store and the tool dispatch are imported when a command opens a project, not when the
command modules that use these helpers are imported (the parser imports them all).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from capabilities.services import Services
    from store import Store

__all__ = ["open_project", "open_services", "operator_call", "run_operator_tool"]


@contextmanager
def open_project(root: str | Path | None) -> Iterator[Store]:
    """The store of the project at ``root`` (or discovered from the working directory)."""
    from store import find_project_root, open_store

    store = open_store(find_project_root(root))
    try:
        yield store
    finally:
        store.close()


@contextmanager
def open_services(root: str | Path | None) -> Iterator[Services]:
    """Tool services over the project at ``root``."""
    from capabilities.services import Services

    with open_project(root) as store:
        yield Services(store=store)


async def operator_call(
    services: Services, tool: str, arguments: dict[str, Any], *, name: str = "operator"
) -> dict[str, Any]:
    """Call ``tool`` as the local operator ``name``, through the same dispatch as every
    transport; its answer, or its structured error raised."""
    from capabilities.mcp import call_tool
    from capabilities.mcp.tools import build_registry
    from capabilities.principals import local_operator

    outcome = await call_tool(services, build_registry(), local_operator(name), tool, arguments)
    if outcome.error is not None:
        raise outcome.error
    assert outcome.result is not None
    return outcome.result


async def run_operator_tool(root: str | Path | None, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """:func:`operator_call` on the project at ``root`` (opened and closed around the call)."""
    with open_services(root) as services:
        return await operator_call(services, tool, arguments)
