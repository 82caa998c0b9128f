"""Integers past SQLite's 64-bit range in any HTTP input: a 400 in the one error shape, no change.

The query and path integers come from the OpenAPI document, so a new documented integer parameter
is covered as soon as it is documented. Path IDs are ones that exist, so the integer is what is
judged, not a missing entry.
"""

from __future__ import annotations

import json
import re
from typing import Any

import anyio
import pytest

from capabilities.http_api import openapi_document
from capabilities.services import Services
from store import Store
from tests.capabilities.api_helpers import Api, assert_error, running_api, seed_review, table_counts

pytestmark = pytest.mark.anyio

_OUT_OF_RANGE = (2**63, -(2**63) - 1)


def _integer_parameters() -> list[tuple[str, str, str]]:
    """``(method, path template, name)`` of every documented integer query or path parameter."""
    found = []
    for template, operations in openapi_document()["paths"].items():
        for method, operation in operations.items():
            for parameter in operation.get("parameters", []):
                if parameter.get("schema", {}).get("type") == "integer":
                    found.append((method, template, parameter["name"]))
    return found


_PARAMETERS = _integer_parameters()


def _fill(template: str, ids: dict[str, Any], overrides: dict[str, str]) -> str:
    known = {
        "memory_id": ids["decision_id"],
        "proposal_id": ids["proposal_id"],
        "event_id": str(ids["warning_event_id"]),
    }
    return re.sub(r"\{(\w+)\}", lambda m: overrides.get(m[1], known[m[1]]), template)


async def _status(api: Api, method: str, path: str, params: dict[str, str]) -> tuple[int, bytes]:
    """Status and body; a stream that opens (200) is closed at once instead of read to its end."""
    kwargs: dict[str, Any] = {"params": params}
    if method == "post":
        kwargs.update(
            content=json.dumps({"verdict": "confirmed"}), headers={"content-type": "application/json"}
        )
    with anyio.fail_after(10):
        async with api.client.stream(method.upper(), path, **kwargs) as response:
            return response.status_code, b"" if response.status_code == 200 else await response.aread()


def test_the_documented_integer_parameters_are_found() -> None:
    assert ("get", "/events/stream", "after") in _PARAMETERS
    assert ("get", "/proposals/{proposal_id}/patch", "version") in _PARAMETERS
    assert ("post", "/warnings/{event_id}/feedback", "event_id") in _PARAMETERS


@pytest.mark.parametrize("value", _OUT_OF_RANGE, ids=["2**63", "-2**63-1"])
@pytest.mark.parametrize(("method", "template", "name"), _PARAMETERS, ids=["_".join(p) for p in _PARAMETERS])
async def test_an_integer_parameter_past_int64_is_a_400(
    method: str, template: str, name: str, value: int, services: Services, store: Store
) -> None:
    ids = seed_review(store)
    async with running_api(services) as api:  # (which mints its token first)
        before = table_counts(store)
        in_path = f"{{{name}}}" in template
        path = _fill(template, ids, {name: str(value)} if in_path else {})
        status, body = await _status(api, method, path, {} if in_path else {name: str(value)})
    assert status == 400, (method, path, status, body[:300])
    assert json.loads(body)["error"]["code"] == "invalid_argument"
    assert table_counts(store) == before


_CREATE = {"scope": "project", "kind": "fact", "title": "t", "body_md": "b"}


@pytest.mark.parametrize("value", [*_OUT_OF_RANGE, 10**400], ids=["2**63", "-2**63-1", "10**400"])
@pytest.mark.parametrize("field", ["source_event_id", "importance", "confidence", "reliability"])
async def test_a_number_past_int64_in_a_memory_body_is_a_400(
    field: str, value: int, services: Services, store: Store
) -> None:
    async with running_api(services) as api:
        before = table_counts(store)
        response = await api.client.post("/memories", content=json.dumps({**_CREATE, field: value}))
        assert_error(response, 400, "invalid_memory")
    assert table_counts(store) == before


@pytest.mark.parametrize("value", [*_OUT_OF_RANGE, 10**400], ids=["2**63", "-2**63-1", "10**400"])
async def test_an_expected_revision_past_int64_is_a_400(value: int, services: Services, store: Store) -> None:
    ids = seed_review(store)
    async with running_api(services) as api:
        before = table_counts(store)
        response = await api.client.post(
            f"/memories/{ids['decision_id']}/revisions",
            content=json.dumps({"body_md": "new", "expected_revision": value}),
        )
        assert_error(response, 400, "invalid_expected_revision")
    assert table_counts(store) == before
