"""Every cell of the role-by-tool table: a call the table allows works, every other is refused unchanged.

The table is :data:`capabilities.policy.ACCESS`; docs/agents.md publishes it, and a test here
checks the two agree. Each cell runs in a fresh project (:mod:`tests.capabilities.access_world`)
through :func:`capabilities.mcp.call_tool`, the one path every transport takes. An ``own`` cell is
also tried on someone else's work or identity, which must be ``forbidden`` and change nothing; a
call that works writes events naming the caller and the credential it came through.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio.from_thread
import pytest

from capabilities.mcp import call_tool
from capabilities.mcp.tools import build_registry
from capabilities.policy import ACCESS, Reach
from capabilities.principals import Principal
from store import Store, list_events
from tests.capabilities.access_world import (
    ROLES,
    World,
    arguments,
    build,
    foreign_tools,
    own_tools,
    services_of,
)
from tests.helpers import project_snapshot

REGISTRY = build_registry()
TOOLS = REGISTRY.names()
DOC = Path(__file__).resolve().parents[2] / "docs" / "agents.md"


@pytest.fixture
def portal() -> Iterator[anyio.from_thread.BlockingPortal]:
    with anyio.from_thread.start_blocking_portal("asyncio") as running:
        yield running


def _call(
    portal: anyio.from_thread.BlockingPortal,
    world: World,
    principal: Principal,
    tool: str,
    args: dict[str, Any],
) -> Any:
    services = services_of(world)
    return portal.call(call_tool, services, REGISTRY, principal, tool, args)


def _last_event(store: Store) -> int:
    return int(
        store.db.read(lambda conn: conn.execute("SELECT COALESCE(MAX(id), 0) FROM events").fetchone()[0])
    )


def test_the_fixture_covers_every_tool_and_every_own_cell() -> None:
    assert own_tools() == set(TOOLS)
    own_cells = {tool for cells in ACCESS.values() for tool, reach in cells.items() if reach is Reach.OWN}
    assert own_cells <= foreign_tools()
    assert set(ACCESS) == set(ROLES)
    assert {tool for cells in ACCESS.values() for tool in cells} == set(TOOLS)  # no tool is nobody's


@pytest.mark.parametrize("tool", TOOLS)
@pytest.mark.parametrize("role", ROLES)
def test_each_cell(store: Store, portal: anyio.from_thread.BlockingPortal, role: str, tool: str) -> None:
    world = build(store)
    principal = world.principals[role]
    reach = ACCESS[role].get(tool)
    if reach is Reach.OWN:
        foreign = arguments(world, role, tool, foreign=True)
        before = project_snapshot(store.paths)
        outcome = _call(portal, world, principal, tool, foreign)
        assert outcome.error is not None and outcome.error.code == "forbidden", (foreign, outcome.body())
        assert project_snapshot(store.paths) == before, foreign
    args = arguments(world, role, tool)
    before_snapshot = project_snapshot(store.paths)
    first_new = _last_event(store) + 1
    outcome = _call(portal, world, principal, tool, args)
    if reach is None:
        assert outcome.error is not None and outcome.error.code == "forbidden", (args, outcome.body())
        assert project_snapshot(store.paths) == before_snapshot
        return
    assert outcome.ok, (role, tool, args, outcome.body())
    written = store.db.read(lambda conn: list_events(conn, after=first_new - 1, limit=100))
    for event in written:
        assert event.actor == principal.actor, (tool, event)
        assert event.credential_id == (principal.credential_id or "local"), (tool, event)


def _published_table() -> dict[str, dict[str, str]]:
    """The role-by-tool table of docs/agents.md: {role: {tool: cell}}."""
    text = DOC.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(text) if line.startswith("| tool |"))
    roles = [cell.strip() for cell in text[start].strip().strip("|").split("|")][1:]
    table: dict[str, dict[str, str]] = {role: {} for role in roles}
    for line in text[start + 2 :]:
        if not line.startswith("|"):
            break
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        tool = re.fullmatch(r"`([a-z_.]+)`", cells[0])
        assert tool is not None, line
        for role, cell in zip(roles, cells[1:], strict=True):
            table[role][tool.group(1)] = cell
    return table


def test_the_published_table_is_the_policy() -> None:
    published = _published_table()
    assert set(published) == set(ROLES)
    for role in ROLES:
        expected = {tool: str(ACCESS[role].get(tool, "—")) for tool in TOOLS}
        assert published[role] == expected, role
