"""The policy meta-test: every registered tool has a policy entry; a tool without one is denied;
the oracle's role definition, the policy and what an oracle is served name the same tools."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from capabilities.mcp import RoundtableMCPServer, ToolArgs, ToolCall, ToolRegistry, ToolSpec, call_tool
from capabilities.mcp.tools import all_tools
from capabilities.policy import (
    MEMORY_ORACLE_TOOLS,
    OPERATOR_TOOLS,
    ROLE_TOOLSETS,
    policy_tool_names,
    toolset_for,
)
from capabilities.principals import Principal, PrincipalKind, current_principal, local_operator
from capabilities.services import Services
from capabilities.serving import build_launch_app, serving
from roles.oracle import MEMORY_ORACLE
from store import GrantRecord, Store
from tests.capabilities.http_helpers import mcp_client
from tests.capabilities.oracle_helpers import build_world

pytestmark = pytest.mark.anyio


class _NoArgs(ToolArgs):
    pass


async def _unreachable(call: ToolCall) -> dict[str, Any]:
    raise AssertionError("a tool without a policy entry must never run")


ROGUE = ToolSpec(
    name="debug.dump_everything", description="no policy entry", args_model=_NoArgs, handler=_unreachable
)


def test_every_registered_tool_has_a_policy_entry(registry: ToolRegistry) -> None:
    missing = set(registry.names()) - policy_tool_names()
    assert not missing, f"tools without a policy entry (denied to everyone): {sorted(missing)}"


def test_every_policy_entry_names_a_registered_tool(registry: ToolRegistry) -> None:
    assert policy_tool_names() - set(registry.names()) == set()


def test_the_role_toolsets_are_exactly_the_contract() -> None:
    assert (
        frozenset(
            {
                "task.history",
                "patch.inspect",
                "memory.query",
                "memory.record",
                "memory.summarize",
                "oracle.warn",
            }
        )
        == MEMORY_ORACLE_TOOLS
    )
    assert "oracle.warn" not in OPERATOR_TOOLS
    assert set(ROLE_TOOLSETS) == {
        "operator", "Implementer", "Reviewer", "Security", "memory_oracle", "reviewer", "security",
    }  # fmt: skip
    for name in ("vote.cast", "decision.record", "patch.apply", "proposal.create", "memory.mark_stale"):
        assert name not in MEMORY_ORACLE_TOOLS


def test_a_capability_sees_the_intersection_of_role_and_grant() -> None:
    def capability(role: str, tools: frozenset[str]) -> Principal:
        scopes = frozenset({"T-1", "project"})
        binding = GrantRecord("C-1", role, "a", "P-1", "T-1", scopes, tools, None, "op", "", "", None, None)
        return Principal(kind=PrincipalKind.CAPABILITY, name="a", role=role, grant=binding)

    assert toolset_for(capability("memory_oracle", MEMORY_ORACLE_TOOLS)) == MEMORY_ORACLE_TOOLS
    narrow = capability("memory_oracle", frozenset({"memory.query", "vote.cast"}))
    assert toolset_for(narrow) == {"memory.query"}  # a grant row cannot widen its role
    assert toolset_for(capability("no_such_role", MEMORY_ORACLE_TOOLS)) == frozenset()
    no_grant = Principal(kind=PrincipalKind.CAPABILITY, name="a", role="memory_oracle")
    assert toolset_for(no_grant) == frozenset()
    assert toolset_for(None) == frozenset()


async def test_a_tool_without_a_policy_entry_is_denied_and_unlisted(services: Services, store: Store) -> None:
    registry = ToolRegistry([*all_tools(), ROGUE])
    world = build_world(store)
    for principal in (local_operator(), world.principal):
        outcome = await call_tool(services, registry, principal, ROGUE.name, {})
        assert outcome.error is not None and outcome.error.code == "forbidden"
        server = RoundtableMCPServer(services, registry)
        token = current_principal.set(principal)
        try:
            listed = {tool.name for tool in await server.list_tools()}
        finally:
            current_principal.reset(token)
        assert ROGUE.name not in listed
        assert listed == toolset_for(principal) & set(registry.names())


async def test_an_unknown_caller_gets_nothing(services: Services, registry: ToolRegistry) -> None:
    for name in registry.names():
        outcome = await call_tool(services, registry, None, name, {})
        assert outcome.error is not None and outcome.error.code == "forbidden"


async def test_the_oracle_is_served_exactly_the_tools_its_role_declares(
    services: Services, store: Store, tmp_path: Path
) -> None:
    """One list, three readers: the role definition, the policy, and tools/list over a launch socket."""
    world = build_world(store)
    app = build_launch_app(services, world.grant_id)
    async with (
        serving(app, uds=str(tmp_path / "launch.sock")) as address,
        mcp_client(address, world.token) as client,
    ):
        served = {tool.name for tool in (await client.list_tools()).tools}
    assert served == MEMORY_ORACLE.tools
    assert ROLE_TOOLSETS[MEMORY_ORACLE.name] == MEMORY_ORACLE_TOOLS == MEMORY_ORACLE.tools


def test_the_oracle_prompt_names_exactly_its_tools() -> None:
    sentence = re.search(r"exactly these tools:(.*?)\.\s", MEMORY_ORACLE.prompt, re.DOTALL)
    assert sentence is not None, "the prompt no longer says which tools the oracle has"
    named = {name.strip() for name in sentence.group(1).split(",")}
    assert named == MEMORY_ORACLE.tools
