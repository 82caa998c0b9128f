"""``oracle.feedback`` and ``oracle.stats`` over the real MCP client: operators may, the oracle may not."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from capabilities.services import Services
from capabilities.serving._transports import BoundAddress, build_asgi_app, build_launch_app, serving
from store import OracleStore, Store
from tests.capabilities.api_helpers import table_counts
from tests.capabilities.http_helpers import mcp_client
from tests.capabilities.mcp.test_oracle_tools import call
from tests.capabilities.oracle_helpers import OracleWorld, build_world
from tests.store.feedback.helpers import stats_row

pytestmark = pytest.mark.anyio


@pytest.fixture
def world(store: Store) -> OracleWorld:
    return build_world(store)


@pytest.fixture
def warning_id(store: Store, world: OracleWorld) -> int:
    event = OracleStore(store.db, store.config).warn(
        world.principal.grant,  # type: ignore[arg-type]
        message_md="Raw SQL goes against the builder decision.",
        cited_memory_ids=[world.task_memory],
    )
    return int(event["id"])


@pytest.fixture
async def operator(services: Services, store: Store) -> AsyncIterator[Client]:
    token = store.grants.mint_token(name="alice", actor="operator").token
    address: BoundAddress
    async with (
        serving(build_asgi_app(services), host="127.0.0.1") as address,
        mcp_client(address, token) as c,
    ):
        yield c


async def test_an_operator_gives_feedback_and_reads_stats(
    operator: Client, store: Store, warning_id: int
) -> None:
    tools = {tool.name: tool for tool in (await operator.list_tools()).tools}
    feedback, stats = tools["oracle.feedback"], tools["oracle.stats"]
    assert feedback.annotations is not None and not feedback.annotations.read_only_hint
    assert not feedback.annotations.destructive_hint
    assert stats.annotations is not None and stats.annotations.read_only_hint
    assert set(feedback.input_schema["required"]) == {"warning_event_id", "verdict"}
    assert feedback.input_schema["properties"]["verdict"]["enum"] == ["confirmed", "dismissed"]

    answer = await call(operator, "oracle.feedback", {"warning_event_id": warning_id, "verdict": "confirmed"})
    event = answer["event"]
    assert (event["type"], event["actor"]) == ("memory.oracle_feedback", "alice")
    assert event["payload"]["warning_event_id"] == warning_id
    assert event["payload"]["reason"] is None
    answer = await call(operator, "oracle.stats", {})
    assert answer == {"providers": [stats_row("unknown", 1, 1, 0, 0, 1.0)]}
    before = table_counts(store)
    missing = await call(operator, "oracle.feedback", {"warning_event_id": 999_999, "verdict": "dismissed"})
    assert missing["error"]["code"] == "not_found"
    wrong = await call(operator, "oracle.feedback", {"warning_event_id": 1, "verdict": "dismissed"})
    assert wrong["error"]["code"] == "invalid_argument"
    bad = await call(operator, "oracle.feedback", {"warning_event_id": warning_id, "verdict": "maybe"})
    assert bad["error"]["code"] == "invalid_argument"
    assert table_counts(store) == before


@pytest.mark.parametrize("where", ["uds-launch", "tcp"])
async def test_the_oracle_may_not_judge_its_own_warnings(
    where: str, services: Services, store: Store, world: OracleWorld, warning_id: int, tmp_path: Path
) -> None:
    place: dict[str, Any]
    if where == "uds-launch":
        app, place = build_launch_app(services, world.grant_id), {"uds": str(tmp_path / "launch.sock")}
    else:
        app, place = build_asgi_app(services), {"host": "127.0.0.1"}
    before = table_counts(store)
    address: BoundAddress
    async with serving(app, **place) as address, mcp_client(address, world.token) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert not {"oracle.feedback", "oracle.stats"} & names
        for name, args in (
            ("oracle.feedback", {"warning_event_id": warning_id, "verdict": "confirmed"}),
            ("oracle.stats", {}),
        ):
            refused = await call(client, name, args)
            assert refused["error"]["code"] == "forbidden", refused
    assert table_counts(store) == before
