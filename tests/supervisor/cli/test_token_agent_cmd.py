"""``roundtable token create --agent``, ``token list`` and ``token revoke`` for agent tokens, as a
user runs them (subprocesses on a real project), and when an agent token stops authenticating."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest

from capabilities.auth import principal_from_record
from capabilities.policy import toolset_for
from capabilities.principals import PrincipalKind
from store import ProjectPaths, open_store
from store.access import TokenKind, TokenRecord
from store.access._tokens import parse_time
from store.errors import Unauthenticated
from store.events import LOCAL_CREDENTIAL
from tests.helpers import project_snapshot
from tests.supervisor.cli.test_access_cmd import run
from tests.test_layout import REPO

ROSTER = ("implementer-1", "implementer-2", "memory-oracle-1", "reviewer-1", "reviewer-2", "security-1")


def test_token_create_with_agent_prints_the_operator_shape_plus_agent_id(
    roundtable_argv: list[str], project: ProjectPaths
) -> None:
    code, operator = run(roundtable_argv, project, "token", "create", "--name", "alice")
    assert code == 0, operator
    code, agent = run(roundtable_argv, project, "token", "create", "--name", "r1", "--agent", "reviewer-1")
    assert code == 0, agent
    assert set(agent) == set(operator) | {"agent_id"}
    assert agent["agent_id"] == "reviewer-1"
    assert (agent["kind"], operator["kind"]) == ("agent", "operator")
    assert agent["name"] == "r1" and agent["token_id"] == agent["id"]
    assert agent["expires_at"] is None and agent["revoked_at"] is None
    assert agent["token"] != operator["token"]

    store = open_store(project)
    try:
        record = store.grants.authenticate(agent["token"])
        assert isinstance(record, TokenRecord)
        assert (record.id, record.agent_id, record.kind) == (agent["id"], "reviewer-1", TokenKind.AGENT)
        principal = principal_from_record(record, store.config.agents)
        assert principal.kind is PrincipalKind.AGENT
        assert (principal.actor, principal.role, principal.credential_id) == (
            "reviewer-1",
            "Reviewer",
            agent["id"],
        )
        assert "vote.cast" in toolset_for(principal) and "patch.apply" not in toolset_for(principal)
        # The mint is on record, naming the agent; the raw token is nowhere in the database.
        (event,) = [
            e for e in store.event_feed.after(0, limit=100) if e.payload.get("token_id") == agent["id"]
        ]
        assert event.type == "operator_token.created"
        assert event.payload["agent_id"] == "reviewer-1"
        assert (event.actor, event.credential_id) == ("operator", LOCAL_CREDENTIAL)  # the CLI: no token
    finally:
        store.close()
    assert agent["token"] not in repr(project_snapshot(project))


@pytest.mark.parametrize(
    ("agent", "says"),
    [
        ("nobody", "not in the [agents] roster"),
        ("memory-oracle-1", "MemoryOracle"),
        ("Reviewer-1", "not in the [agents] roster"),  # roster IDs are exact
        ("", "not in the [agents] roster"),
    ],
)
def test_token_create_refuses_an_agent_that_cannot_hold_a_token(
    roundtable_argv: list[str], project: ProjectPaths, agent: str, says: str
) -> None:
    code, listed = run(roundtable_argv, project, "token", "list")
    assert code == 0 and listed == {"tokens": []}
    before = project_snapshot(project)
    code, error = run(roundtable_argv, project, "token", "create", "--name", "x", "--agent", agent)
    assert code == 1
    assert set(error) == {"error"} and error["error"]["code"] == "invalid_argument", error
    message = error["error"]["message"]
    assert says in message
    if says.startswith("not in"):
        # It names the roster, so the operator sees what would have been accepted.
        assert all(name in message for name in ROSTER), message
    assert project_snapshot(project) == before
    assert run(roundtable_argv, project, "token", "list") == (0, {"tokens": []})


def test_token_list_shows_kind_and_agent_id(roundtable_argv: list[str], project: ProjectPaths) -> None:
    _, operator = run(roundtable_argv, project, "token", "create", "--name", "alice")
    _, reviewer = run(roundtable_argv, project, "token", "create", "--name", "r1", "--agent", "reviewer-1")
    _, security = run(roundtable_argv, project, "token", "create", "--name", "s1", "--agent", "security-1")
    code, listed = run(roundtable_argv, project, "token", "list")
    assert code == 0
    by_id = {item["id"]: item for item in listed["tokens"]}
    assert set(by_id) == {operator["id"], reviewer["id"], security["id"]}
    assert by_id[operator["id"]]["kind"] == "operator" and "agent_id" not in by_id[operator["id"]]
    assert (by_id[reviewer["id"]]["kind"], by_id[reviewer["id"]]["agent_id"]) == ("agent", "reviewer-1")
    assert (by_id[security["id"]]["kind"], by_id[security["id"]]["agent_id"]) == ("agent", "security-1")
    for item in listed["tokens"]:
        assert "token" not in item and "token_sha256" not in item
    for token in (operator["token"], reviewer["token"], security["token"]):
        assert token not in repr(listed)


def test_token_revoke_retires_an_agent_token(roundtable_argv: list[str], project: ProjectPaths) -> None:
    _, agent = run(roundtable_argv, project, "token", "create", "--name", "i1", "--agent", "implementer-1")
    _, other = run(roundtable_argv, project, "token", "create", "--name", "i2", "--agent", "implementer-2")
    store = open_store(project)
    try:
        assert store.grants.authenticate(agent["token"]).id == agent["id"]
        code, revoked = run(roundtable_argv, project, "token", "revoke", agent["id"])
        assert code == 0 and revoked["revoked"] is True
        assert revoked["token"]["kind"] == "agent" and revoked["token"]["agent_id"] == "implementer-1"
        assert revoked["token"]["revoked_at"]
        with pytest.raises(Unauthenticated, match="revoked"):
            store.grants.authenticate(agent["token"])
        with pytest.raises(Unauthenticated):
            store.grants.require_live_credential(agent["id"])
        assert store.grants.authenticate(other["token"]).id == other["id"]  # only that one
    finally:
        store.close()
    code, again = run(roundtable_argv, project, "token", "revoke", agent["id"])
    assert code == 0 and again["revoked"] is False
    code, listed = run(roundtable_argv, project, "token", "list")
    (item,) = [t for t in listed["tokens"] if t["id"] == agent["id"]]
    assert item["revoked_at"] == revoked["token"]["revoked_at"]


def test_an_agent_token_with_a_ttl_expires(roundtable_argv: list[str], project: ProjectPaths) -> None:
    code, agent = run(
        roundtable_argv, project, "token", "create", "--name", "r2", "--agent", "reviewer-2", "--ttl", "1"
    )
    assert code == 0, agent
    created, expires = parse_time(agent["created_at"]), parse_time(agent["expires_at"])
    assert expires - created == timedelta(seconds=1)
    store = open_store(project)
    try:
        store.grants.clock = lambda: created  # no sleeping: the store's clock moves instead
        assert store.grants.authenticate(agent["token"]).id == agent["id"]
        store.grants.clock = lambda: expires
        with pytest.raises(Unauthenticated, match="expired"):
            store.grants.authenticate(agent["token"])
        with pytest.raises(Unauthenticated, match="expired"):
            store.grants.require_live_credential(agent["id"])
    finally:
        store.close()
    code, error = run(
        roundtable_argv, project, "token", "create", "--name", "r2", "--agent", "reviewer-2", "--ttl", "0"
    )
    assert code == 2 and error["error"]["code"] == "invalid_argument"  # a usage error


def _drop_from_roster(project: ProjectPaths, agent: str) -> None:
    config = project.root / ".roundtable" / "config.toml"
    text = config.read_text()
    line = re.compile(rf'^"{re.escape(agent)}"\s*=.*\n', re.MULTILINE)
    assert line.search(text), text
    config.write_text(line.sub("", text))


def test_taking_an_agent_off_the_roster_retires_its_tokens(
    roundtable_argv: list[str], project: ProjectPaths
) -> None:
    _, agent = run(roundtable_argv, project, "token", "create", "--name", "r1", "--agent", "reviewer-1")
    _, peer = run(roundtable_argv, project, "token", "create", "--name", "r2", "--agent", "reviewer-2")
    _, operator = run(roundtable_argv, project, "token", "create", "--name", "alice")
    _drop_from_roster(project, "reviewer-1")
    store = open_store(project)
    try:
        assert "reviewer-1" not in store.config.agents
        with pytest.raises(Unauthenticated, match="roster"):
            store.grants.authenticate(agent["token"])
        assert store.grants.authenticate(peer["token"]).id == peer["id"]
        assert store.grants.authenticate(operator["token"]).id == operator["id"]
    finally:
        store.close()
    # No new token for it either.
    code, error = run(roundtable_argv, project, "token", "create", "--name", "r1b", "--agent", "reviewer-1")
    assert code == 1 and error["error"]["code"] == "invalid_argument"


def test_the_agent_options_are_documented() -> None:
    rows = (REPO / "docs" / "cli.md").read_text(encoding="utf-8").splitlines()
    for command in ("roundtable token create", "roundtable mcp stdio"):
        (row,) = [line for line in rows if line.startswith(f"| `{command}")]
        assert "--agent" in row, row
