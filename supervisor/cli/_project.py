"""Opening a project for a command: root discovery, the store, the services.

The store and the tool dispatch are imported when a command opens a project, not when the
command modules that use these helpers are imported (the parser imports them all).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from capabilities.services import Services
    from store import Store

__all__ = [
    "open_project",
    "open_services",
    "operator_call",
    "resolve_id",
    "resolve_root_id",
    "run_operator_tool",
]

IdKinds = Mapping[str, str]
"""The arguments of a call that may be abbreviated IDs, and their kind: ``{"proposal_id": "proposal"}``."""


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


def resolve_id(store: Store, kind: str, value: str) -> str:
    """The full ID ``value`` (an ID or a unique prefix of one) names: :func:`store.resolve_id_prefix`."""
    from store import resolve_id_prefix

    return str(store.db.read(lambda conn: resolve_id_prefix(conn, kind, value)))


def resolve_root_id(root: str | Path | None, kind: str, value: str) -> str:
    """:func:`resolve_id` on the project at ``root`` (opened and closed around it)."""
    with open_project(root) as store:
        return resolve_id(store, kind, value)


async def _resolved(store: Store, arguments: dict[str, Any], ids: IdKinds) -> dict[str, Any]:
    import anyio.to_thread

    out = dict(arguments)
    for key, kind in ids.items():
        if isinstance(out.get(key), str):
            out[key] = await anyio.to_thread.run_sync(resolve_id, store, kind, out[key])
    return out


async def operator_call(
    services: Services,
    tool: str,
    arguments: dict[str, Any],
    *,
    name: str = "operator",
    ids: IdKinds | None = None,
) -> dict[str, Any]:
    """Call ``tool`` as the local operator ``name``, through the same dispatch as every
    transport; its answer, or its structured error raised. The arguments named in ``ids`` may be
    unique ID prefixes: they are resolved to full IDs first."""
    from capabilities.mcp import call_tool
    from capabilities.mcp.tools import build_registry
    from capabilities.principals import local_operator

    if ids:
        arguments = await _resolved(services.store, arguments, ids)
    outcome = await call_tool(services, build_registry(), local_operator(name), tool, arguments)
    if outcome.error is not None:
        raise outcome.error
    assert outcome.result is not None
    return outcome.result


async def run_operator_tool(
    root: str | Path | None, tool: str, arguments: dict[str, Any], *, ids: IdKinds | None = None
) -> dict[str, Any]:
    """:func:`operator_call` on the project at ``root`` (opened and closed around the call)."""
    with open_services(root) as services:
        return await operator_call(services, tool, arguments, ids=ids)


def gitignore_state(root: Path) -> bool | None:
    """Whether git ignores ``root/.roundtable/`` (``git check-ignore``); ``None`` when ``root`` is
    not in a git work tree or git is missing."""
    import subprocess

    try:
        checked = subprocess.run(
            ["git", "check-ignore", "-q", ".roundtable/"],
            cwd=root,
            capture_output=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return {0: True, 1: False}.get(checked.returncode)  # 128: not a repository


def add_to_gitignore(root: Path) -> None:
    """Append ``.roundtable/`` to ``root/.gitignore`` (created if missing), on a line of its own."""
    path = root / ".gitignore"
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    separator = "" if not text or text.endswith("\n") else "\n"
    path.write_text(f"{text}{separator}.roundtable/\n", encoding="utf-8")
