"""Hostile input to ``oracle.warn`` from a role container: refused, and nothing written."""

from __future__ import annotations

from typing import Any

import pytest

from capabilities.mcp import call_tool
from capabilities.mcp.tools import build_registry
from capabilities.services import Services
from store import Store
from tests.capabilities.oracle_helpers import OracleWorld, build_world

pytestmark = pytest.mark.anyio


def _warnings(store: Store) -> int:
    row = store.db.read(
        lambda conn: conn.execute(
            "SELECT count(*) FROM events WHERE type = 'memory.oracle_warning'"
        ).fetchone()
    )
    return int(row[0])


async def _warn(store: Store, world: OracleWorld, **arguments: Any) -> dict[str, Any]:
    arguments.setdefault("message_md", "the patch adds raw SQL")
    arguments.setdefault("cited_memory_ids", [world.task_memory])
    outcome = await call_tool(
        Services(store=store), build_registry(), world.principal, "oracle.warn", arguments
    )
    return outcome.body()


@pytest.mark.parametrize(
    ("arguments", "code"),
    [
        ({"message_md": "\x1b[2Jcleared"}, "invalid_argument"),  # the store's one text rule
        ({"message_md": "bell\x07"}, "invalid_argument"),
        ({"cited_event_ids": [2**63]}, "invalid_argument"),  # beyond SQLite's integers: not internal
        ({"cited_event_ids": [-(2**70)]}, "invalid_argument"),
        ({"cited_event_ids": [0]}, "invalid_argument"),
    ],
    ids=["escape", "bell", "int64-plus-one", "huge-negative", "zero"],
)
async def test_hostile_warnings_are_refused_and_write_nothing(
    store: Store, arguments: dict[str, Any], code: str
) -> None:
    world = build_world(store)
    before = _warnings(store)
    body = await _warn(store, world, **arguments)
    assert body["error"]["code"] == code, body
    assert _warnings(store) == before


async def test_a_plain_warning_still_goes_through(store: Store) -> None:
    world = build_world(store)
    body = await _warn(store, world, message_md="line one\n\tline two\r\n")
    assert "event" in body, body
