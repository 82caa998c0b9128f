"""Every tool's advertised schemas are honest: titles, output schemas the answers validate against,
input defaults that validate against their own schemas, and errors that stay structured.

Each allowed cell of the access table (:mod:`tests.capabilities.access_world`) is called through
the real MCP client, connected in-process to a :class:`RoundtableMCPServer` serving that role's
principal: the client itself validates ``structuredContent`` against the ``outputSchema`` it
listed, and the test validates it again with jsonschema.
"""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
from mcp import Client

from capabilities.mcp import RoundtableMCPServer
from capabilities.mcp.tools import build_registry
from capabilities.policy import ACCESS
from capabilities.principals import local_operator
from capabilities.services import Services
from store import Store
from tests.capabilities.access_world import ROLES, arguments, build, services_of

pytestmark = pytest.mark.anyio

REGISTRY = build_registry()
CELLS = [(role, tool) for role in ROLES for tool in REGISTRY.names() if tool in ACCESS[role]]


def _validator(schema: dict[str, Any]) -> jsonschema.protocols.Validator:
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def test_every_tool_has_a_title_and_an_output_schema_from_its_result_model() -> None:
    for spec in REGISTRY.specs():
        assert spec.title, spec.name
        assert spec.result_model is not None, spec.name
        schema = spec.output_schema()
        assert schema is not None and schema["type"] == "object", spec.name
        assert schema["properties"], spec.name
        _validator(schema)


def test_every_input_default_validates_against_its_own_schema() -> None:
    for spec in REGISTRY.specs():
        schema = spec.input_schema()
        for prop in schema["properties"].values():
            if "default" in prop:
                _validator({**prop, "$defs": schema.get("$defs", {})}).validate(prop["default"])


def test_memory_query_advertises_a_nullable_query() -> None:
    query = REGISTRY.get("memory.query")
    assert query is not None
    prop = query.input_schema()["properties"]["query"]
    assert prop["default"] is None
    assert prop["anyOf"] == [{"type": "string"}, {"type": "null"}]


async def test_tools_list_carries_titles_and_output_schemas(services: Services) -> None:
    server = RoundtableMCPServer(services, REGISTRY, default_principal=local_operator())
    async with Client(server) as client:
        listed = (await client.list_tools()).tools
    assert listed
    for tool in listed:
        spec = REGISTRY.get(tool.name)
        assert spec is not None
        assert tool.title == spec.title
        assert tool.output_schema == spec.output_schema()


@pytest.mark.parametrize(("role", "tool"), CELLS)
async def test_each_answer_validates_against_its_output_schema(store: Store, role: str, tool: str) -> None:
    world = build(store)
    server = RoundtableMCPServer(services_of(world), REGISTRY, default_principal=world.principals[role])
    async with Client(server) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        # The SDK's client validates structuredContent against the listed outputSchema and raises
        # when it does not conform.
        result = await client.call_tool(tool, arguments(world, role, tool))
    assert not result.is_error, (role, tool, result.structured_content)
    schema = listed[tool].output_schema
    assert schema is not None
    _validator(schema).validate(result.structured_content)


async def test_an_error_answer_is_the_structured_error_body(services: Services) -> None:
    server = RoundtableMCPServer(services, REGISTRY, default_principal=local_operator())
    async with Client(server) as client:
        # The SDK validates only results that are not errors, so the error body passes untouched.
        missing = await client.call_tool("memory.mark_stale", {"memory_id": "M-missing", "reason_md": "why"})
        unknown = await client.call_tool("memory.forget", {})
    assert missing.is_error and unknown.is_error
    assert missing.structured_content is not None and unknown.structured_content is not None
    assert missing.structured_content["error"]["code"] == "not_found"
    assert unknown.structured_content["error"]["code"] == "not_found"
    assert set(missing.structured_content) == {"error"}
