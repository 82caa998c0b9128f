"""``POST /memories`` with ``checks`` over real HTTP: stored, shown, refused as invalid_memory."""

from __future__ import annotations

from typing import Any

import pytest

from capabilities.services import Services
from tests.capabilities.api_helpers import assert_error, running_api, table_counts
from tests.capabilities.mcp.test_memory_checks_mcp import BAD, TLS

pytestmark = pytest.mark.anyio

_ENTRY = {"scope": "project", "kind": "constraint", "title": "TLS", "body_md": "Stays on."}


async def test_checks_round_trip_through_create_detail_and_list(services: Services) -> None:
    async with running_api(services) as api:
        created = await api.client.post("/memories", json={**_ENTRY, "checks": [TLS]})
        assert created.status_code == 201, created.text
        memory = created.json()["memory"]
        assert memory["checks"] == [TLS]
        detail = (await api.client.get(f"/memories/{memory['id']}")).json()["memory"]
        assert detail["checks"] == [TLS]
        listed = (await api.client.get("/memories")).json()["items"]
        assert [item["checks"] for item in listed] == [[TLS]]


@pytest.mark.parametrize(("fields", "problem"), BAD)
async def test_bad_checks_are_invalid_memory_and_write_nothing(
    services: Services, fields: dict[str, Any], problem: str
) -> None:
    async with running_api(services) as api:
        before = table_counts(services.store)
        response = await api.client.post("/memories", json={**_ENTRY, **fields})
        error = assert_error(response, 400, "invalid_memory")
        assert problem in error["message"], error
        assert table_counts(services.store) == before
