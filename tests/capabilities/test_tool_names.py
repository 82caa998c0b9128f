"""Underscore aliases: one unambiguous table, both spellings callable, the policy on the canonical name.

Every role of the access table is tried on the underscore alias of every tool: an alias of a tool
outside the role's toolset is ``forbidden`` and changes nothing, exactly as the dotted name is; an
alias of an allowed tool answers what the dotted name answers. A name that is no tool's is
``not_found`` for everyone.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio.from_thread
import pytest
from mcp import Client

from capabilities.mcp import RoundtableMCPServer, ToolArgs, ToolNaming, ToolRegistry, ToolSpec, call_tool
from capabilities.mcp.tools import build_registry
from capabilities.policy import ACCESS
from capabilities.principals import local_operator
from capabilities.services import Services
from store import Store
from tests.capabilities.access_world import ROLES, arguments, build, services_of
from tests.helpers import project_snapshot

REGISTRY = build_registry()


@pytest.fixture
def portal() -> Iterator[anyio.from_thread.BlockingPortal]:
    with anyio.from_thread.start_blocking_portal("asyncio") as running:
        yield running


def _spec(name: str) -> ToolSpec:
    async def handler(call: Any) -> dict[str, Any]:
        return {}

    return ToolSpec(name, "test", ToolArgs, handler)


def test_every_alias_resolves_to_its_tool_and_only_to_it() -> None:
    for spec in REGISTRY.specs():
        assert REGISTRY.resolve(spec.name) is spec
        assert REGISTRY.resolve(spec.name.replace(".", "_")) is spec
    assert REGISTRY.resolve("memory-query") is None
    assert REGISTRY.resolve("memory.query ") is None


@pytest.mark.parametrize(
    "names", [("a_b.c", "a.b_c"), ("a.b", "a_b"), ("a_b", "a.b"), ("x.y", "x.y")], ids=str
)
def test_an_ambiguous_spelling_cannot_be_registered(names: tuple[str, str]) -> None:
    with pytest.raises(ValueError):
        ToolRegistry([_spec(names[0]), _spec(names[1])])


@pytest.mark.parametrize("role", ROLES)
def test_an_alias_never_reaches_a_tool_outside_the_toolset(
    store: Store, portal: anyio.from_thread.BlockingPortal, role: str
) -> None:
    world = build(store)
    services = services_of(world)
    principal = world.principals[role]
    before = project_snapshot(store.paths)
    refused = [tool for tool in REGISTRY.names() if tool not in ACCESS[role]]
    assert refused or role == "operator"
    for tool in refused:
        for spelling in (tool, tool.replace(".", "_")):
            outcome = portal.call(
                call_tool, services, REGISTRY, principal, spelling, arguments(world, "operator", tool)
            )
            assert outcome.error is not None and outcome.error.code == "forbidden", (role, spelling)
    for spelling in ("vote.nonexistent", "vote_nonexistent", "memory__query", ""):
        outcome = portal.call(call_tool, services, REGISTRY, principal, spelling, {})
        assert outcome.error is not None and outcome.error.code == "not_found", (role, spelling)
    assert project_snapshot(store.paths) == before


@pytest.mark.parametrize("role", ROLES)
def test_an_alias_of_an_allowed_tool_answers_as_the_dotted_name(
    store: Store, portal: anyio.from_thread.BlockingPortal, role: str
) -> None:
    world = build(store)
    services = services_of(world)
    principal = world.principals[role]
    for tool in ("memory.query", "proposal.get", "patch.inspect"):
        if tool not in ACCESS[role]:
            continue
        args = arguments(world, role, tool)
        dotted = portal.call(call_tool, services, REGISTRY, principal, tool, args)
        alias = portal.call(call_tool, services, REGISTRY, principal, tool.replace(".", "_"), args)
        assert dotted.ok and alias.ok, (role, tool, dotted.body(), alias.body())
        assert alias.body() == dotted.body()


@pytest.mark.anyio
@pytest.mark.parametrize("naming", list(ToolNaming))
async def test_the_listing_uses_the_chosen_spelling_and_both_are_callable(
    services: Services, naming: ToolNaming
) -> None:
    server = RoundtableMCPServer(services, REGISTRY, default_principal=local_operator(), tool_names=naming)
    async with Client(server) as client:
        listed = [tool.name for tool in (await client.list_tools()).tools]
        for spelling in ("memory.query", "memory_query"):
            result = await client.call_tool(spelling, {"query": "x"})
            assert not result.is_error, (spelling, result.structured_content)
            assert result.structured_content == {"entries": []}
    assert "memory.query" in listed if naming is ToolNaming.DOTTED else "memory_query" in listed
    if naming is ToolNaming.UNDERSCORE:
        assert all("." not in name for name in listed)
        assert all(name.replace("_", "").isalnum() for name in listed)  # ^[a-zA-Z0-9_-]+$
    else:
        assert set(listed) <= set(REGISTRY.names())
