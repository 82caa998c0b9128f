"""A revocation that lands after a capability call was authenticated still stops its writes."""

from __future__ import annotations

import pytest

from capabilities.mcp._dispatch import call_tool
from capabilities.mcp.tools import build_registry
from capabilities.services import Services
from store import Store
from tests.capabilities.oracle_helpers import build_world
from tests.helpers import project_snapshot

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        (
            "memory.record",
            {"scope": "project", "kind": "decision", "title": "Raw SQL is fine", "body_md": "x"},
        ),
        ("oracle.warn", {"message_md": "late", "cited_memory_ids": []}),
    ],
)
async def test_writes_after_revocation_are_refused(
    store: Store, tool: str, arguments: dict[str, object]
) -> None:
    world = build_world(store)
    if tool == "oracle.warn":
        arguments = {**arguments, "cited_memory_ids": [world.project_memory]}
    principal = world.principal  # authenticated while the grant was live
    store.grants.revoke(world.grant_id, actor="op", reason="launch ended")
    before = project_snapshot(store.paths)
    outcome = await call_tool(Services(store=store), build_registry(), principal, tool, arguments)
    assert outcome.error is not None
    assert outcome.error.code == "unauthenticated"
    assert project_snapshot(store.paths) == before
