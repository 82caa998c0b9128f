"""Agent tokens: bound to one roster agent, checked against the roster on every use."""

from __future__ import annotations

from datetime import timedelta

import pytest

from capabilities.auth import issue_agent_token, principal_from_record
from capabilities.policy import AGENT_ROLES, agent_role, toolset_for
from capabilities.principals import PrincipalKind
from store import InvalidArgument, Store, Unauthenticated
from store.access import GrantStore, TokenKind
from tests.helpers import project_snapshot


def test_an_agent_token_acts_as_its_agent_with_its_roles_tools(store: Store) -> None:
    issued = issue_agent_token(store, name="r1", agent_id="reviewer-1", actor="op")
    assert issued.record.kind is TokenKind.AGENT and issued.record.agent_id == "reviewer-1"
    assert issued.record.to_dict()["agent_id"] == "reviewer-1"
    assert issued.token not in repr(issued)
    principal = principal_from_record(store.grants.authenticate(issued.token), store.config.agents)
    assert (principal.kind, principal.actor, principal.role) == (
        PrincipalKind.AGENT,
        "reviewer-1",
        "Reviewer",
    )
    assert principal.credential_id == issued.record.id
    assert not principal.is_operator and principal.agent_id == "reviewer-1"
    assert "vote.cast" in toolset_for(principal) and "patch.apply" not in toolset_for(principal)


@pytest.mark.parametrize("agent", ["nobody", "memory-oracle-1", "reviewer-1\n", "", None, 7])
def test_only_roster_agents_in_agent_roles_get_tokens(store: Store, agent: object) -> None:
    before = project_snapshot(store.paths)
    with pytest.raises(InvalidArgument) as raised:
        issue_agent_token(store, name="x", agent_id=agent, actor="op")  # type: ignore[arg-type]
    assert "[agents]" in raised.value.message or "MemoryOracle" in raised.value.message
    assert project_snapshot(store.paths) == before


def test_the_store_refuses_agents_off_the_roster_even_without_the_policy(store: Store) -> None:
    before = project_snapshot(store.paths)
    with pytest.raises(InvalidArgument, match="roster"):
        store.grants.mint_token(name="x", agent_id="nobody", actor="op")
    assert project_snapshot(store.paths) == before


def test_leaving_the_roster_retires_the_agents_tokens(store: Store) -> None:
    issued = issue_agent_token(store, name="i2", agent_id="implementer-2", actor="op")
    assert store.grants.authenticate(issued.token).id == issued.record.id
    roster = {agent: role for agent, role in store.config.agents.items() if agent != "implementer-2"}
    narrowed = GrantStore(store.db, roster=roster)
    with pytest.raises(Unauthenticated, match="roster"):
        narrowed.authenticate(issued.token)
    with pytest.raises(Unauthenticated, match="roster"):
        principal_from_record(store.grants.authenticate(issued.token), roster)


def test_revoked_and_expired_agent_tokens_are_refused(store: Store) -> None:
    revoked = issue_agent_token(store, name="r1", agent_id="reviewer-1", actor="op")
    store.grants.revoke_token(revoked.record.id, actor="op")
    with pytest.raises(Unauthenticated, match="revoked"):
        store.grants.authenticate(revoked.token)
    expiring = issue_agent_token(store, name="r2", agent_id="reviewer-2", actor="op", ttl_seconds=60)
    assert expiring.record.expires_at is not None
    clock = store.grants.clock
    store.grants.clock = lambda: clock() + timedelta(seconds=61)  # move time on; never sleep
    try:
        with pytest.raises(Unauthenticated, match="expired"):
            store.grants.authenticate(expiring.token)
    finally:
        store.grants.clock = clock


def test_agent_tokens_never_open_a_console_session(store: Store) -> None:
    issued = issue_agent_token(store, name="r1", agent_id="reviewer-1", actor="op")
    before = project_snapshot(store.paths)
    with pytest.raises(Unauthenticated):
        store.console_sessions.start(issued.record)
    assert project_snapshot(store.paths) == before


def test_agent_roles_are_the_roster_roles_that_act_through_tokens() -> None:
    assert {"Implementer", "Reviewer", "Security"} == AGENT_ROLES
    assert agent_role({"a": "Reviewer"}, "a") == "Reviewer"
    with pytest.raises(InvalidArgument, match="MemoryOracle runs only as a launch"):
        agent_role({"o": "MemoryOracle"}, "o")
    with pytest.raises(InvalidArgument, match="not in the"):
        agent_role({"a": "Reviewer"}, "a\n")


def test_an_operator_token_cannot_take_a_roster_agents_name(store: Store) -> None:
    before = project_snapshot(store.paths)
    with pytest.raises(InvalidArgument, match="--agent reviewer-1"):
        store.grants.mint_token(name="reviewer-1", actor="op")
    assert project_snapshot(store.paths) == before
    assert (
        store.grants.mint_token(name="reviewer-1", agent_id="reviewer-1", actor="op").record.kind
        is TokenKind.AGENT
    )
