"""The OpenAPI document: served, equal to the checked-in docs/openapi.json, covering every route."""

from __future__ import annotations

import json

import pytest
from starlette.routing import Route

from capabilities.http_api import openapi_document
from capabilities.services import Services
from capabilities.serving import WebService
from tests.capabilities.api_helpers import closures_among, running_api
from tests.conftest import REPO_ROOT

CHECKED_IN = REPO_ROOT / "docs" / "openapi.json"


@pytest.mark.anyio
async def test_the_served_document_is_the_checked_in_one(services: Services) -> None:
    async with running_api(services) as api:
        response = await api.client.get("/openapi.json")
    assert response.status_code == 200
    checked_in = json.loads(CHECKED_IN.read_text(encoding="utf-8"))
    assert response.json() == checked_in, "regenerate: python -m capabilities.http_api > docs/openapi.json"
    assert openapi_document() == checked_in


def test_the_document_covers_every_mounted_route_and_nothing_else(services: Services) -> None:
    mounted = {
        (method, route.path)
        for route in WebService(services).api_routes()
        if isinstance(route, Route)
        for method in (route.methods or set())
        if method != "HEAD"
    }
    documented = {
        (method.upper(), path)
        for path, operations in openapi_document()["paths"].items()
        for method in operations
    }
    assert mounted == documented


def test_every_api_endpoint_is_a_module_level_function(services: Services) -> None:
    """No route factory: the handlers read the services from ``request.app.state``."""
    assert closures_among(WebService(services).api_routes()) == []


def test_every_operation_documents_its_errors_and_mutations_their_headers() -> None:
    document = openapi_document()
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            assert "401" in operation["responses"], (method, path)
            headers = {p["name"] for p in operation.get("parameters", []) if p["in"] == "header"}
            if method == "post":
                assert {"X-Actor-ID", "Idempotency-Key"} <= headers, path
                assert {"403", "409"} <= set(operation["responses"]), path
            for status, answer in operation["responses"].items():
                if status.startswith(("4", "5")):
                    assert answer["content"]["application/json"]["schema"] == {
                        "$ref": "#/components/schemas/Error"
                    }
