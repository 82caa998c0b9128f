"""The work tools through the dispatcher every transport uses: answers, schemas, and refusals
that change nothing (database and patches tree compared before and after)."""

from __future__ import annotations

import json
import sqlite3
from enum import StrEnum
from typing import Any, get_args

import pytest
import structlog
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from capabilities.mcp._dispatch import call_tool
from capabilities.mcp._registry import ToolRegistry
from capabilities.policy import OPERATOR_TOOLS
from capabilities.principals import local_operator
from capabilities.services import Services
from store import work
from tests.helpers import project_snapshot
from tests.store.work_helpers import DIFF, DIFF_V2, seed_files

pytestmark = pytest.mark.anyio

WORK_TOOLS = {
    "task.create", "task.get", "task.list", "proposal.create", "proposal.attach_patch", "proposal.get",
    "proposal.list", "proposal.request_review", "proposal.timeline", "vote.cast", "vote.list",
    "decision.record", "patch.reject", "patch.validate", "patch.apply",
}  # fmt: skip
READ_ONLY = {
    "task.get",
    "task.list",
    "proposal.get",
    "proposal.list",
    "proposal.timeline",
    "vote.list",
    "patch.validate",
}


async def _call(
    services: Services, registry: ToolRegistry, name: str, args: dict[str, Any]
) -> dict[str, Any]:
    outcome = await call_tool(services, registry, local_operator(), name, args)
    return outcome.body()


async def _ok(services: Services, registry: ToolRegistry, name: str, args: dict[str, Any]) -> dict[str, Any]:
    body = await _call(services, registry, name, args)
    assert "error" not in body, body
    return body


@pytest.fixture
async def world(services: Services, registry: ToolRegistry) -> dict[str, str]:
    """A task, a proposal in review with one vote, and an untouched pending proposal."""
    seed_files(services.store.paths.root)
    task = (await _ok(services, registry, "task.create", {"title": "Shout"}))["task"]
    args = {"task_id": task["id"], "agent_id": "implementer-1", "title": "p", "patch": DIFF}
    reviewed = (await _ok(services, registry, "proposal.create", args))["proposal"]
    pending = (await _ok(services, registry, "proposal.create", args))["proposal"]
    await _ok(services, registry, "proposal.request_review", {"proposal_id": reviewed["id"]})
    await _ok(
        services, registry, "vote.cast",
        {"proposal_id": reviewed["id"], "agent_id": "reviewer-1", "vote": "approve", "reason_md": "ok"},
    )  # fmt: skip
    return {"task": task["id"], "proposal": reviewed["id"], "pending": pending["id"]}


def test_every_work_tool_is_registered_with_a_policy_entry(registry: ToolRegistry) -> None:
    assert set(registry.names()) >= WORK_TOOLS
    assert WORK_TOOLS <= OPERATOR_TOOLS
    for name in WORK_TOOLS:
        spec = registry.get(name)
        assert spec is not None
        assert spec.read_only is (name in READ_ONLY)
        schema = spec.input_schema()
        assert schema["additionalProperties"] is False and schema["type"] == "object"


def test_advertised_vocabularies_match_the_store(registry: ToolRegistry) -> None:
    def enum(tool: str, field: str) -> list[str]:
        spec = registry.get(tool)
        assert spec is not None
        prop = spec.input_schema()["properties"][field]
        options = prop.get("enum") or next(o["enum"] for o in prop["anyOf"] if "enum" in o)
        return list(options)

    assert enum("vote.cast", "vote") == list(work.Vote)
    assert enum("decision.record", "outcome") == list(work.DecisionOutcome)
    assert enum("task.create", "priority") == list(work.TaskPriority)
    assert enum("task.create", "risk") == list(work.Risk)
    assert enum("proposal.create", "risk") == list(work.Risk)
    assert enum("proposal.list", "status") == list(work.ProposalStatus)
    assert enum("task.list", "status") == list(work.TaskStatus)


@pytest.mark.parametrize(
    ("literal", "vocabulary"),
    [
        (work.VoteWord, work.Vote),
        (work.DecisionOutcomeWord, work.DecisionOutcome),
        (work.TaskPriorityWord, work.TaskPriority),
        (work.TaskStatusWord, work.TaskStatus),
        (work.RiskWord, work.Risk),
        (work.ProposalStatusWord, work.ProposalStatus),
    ],
)
def test_each_argument_literal_spells_its_enum(literal: Any, vocabulary: type[StrEnum]) -> None:
    assert get_args(literal) == tuple(member.value for member in vocabulary)


async def test_tools_answer_their_documented_shapes(
    services: Services, registry: ToolRegistry, world: dict[str, str]
) -> None:
    pid = world["proposal"]
    got = await _ok(services, registry, "task.get", {"task_id": world["task"]})
    assert got["task"]["id"] == world["task"] and len(got["proposals"]) == 2
    listed = await _ok(services, registry, "proposal.list", {"task_id": world["task"], "limit": 1})
    assert [p["id"] for p in listed["proposals"]] == [pid] and listed["next_cursor"] == pid
    cast = await _ok(
        services, registry, "vote.cast",
        {"proposal_id": pid, "agent_id": "reviewer-2", "vote": "approve_with_notes", "reason_md": "nit"},
    )  # fmt: skip
    assert cast["proposal_status"] == "accepted" and cast["consensus"]["reached"] is True
    assert cast["vote"]["patch_version"] == 1 and cast["vote"]["counts"] is True
    votes = await _ok(services, registry, "vote.list", {"proposal_id": pid})
    assert [v["agent_id"] for v in votes["votes"]] == ["reviewer-1", "reviewer-2"]
    checked = await _ok(services, registry, "patch.validate", {"proposal_id": pid})
    assert checked["ok"] is True and checked["version"] == 1
    applied = await _ok(services, registry, "patch.apply", {"proposal_id": pid})
    assert applied["proposal"]["status"] == "applied" and applied["transaction"]["status"] == "applied"
    timeline = await _ok(services, registry, "proposal.timeline", {"proposal_id": pid})
    assert timeline["events"][-1]["type"] == "proposal.applied"
    attached = await _ok(
        services, registry, "proposal.attach_patch", {"proposal_id": world["pending"], "patch": DIFF_V2}
    )
    assert attached["patch"]["version"] == 2 and attached["invalidated_vote_ids"] == []
    rejected = await _ok(
        services, registry, "patch.reject", {"proposal_id": world["pending"], "reason_md": "dup"}
    )
    assert rejected["proposal"]["status"] == "rejected" and rejected["decision"]["outcome"] == "rejected"
    noted = await _ok(
        services,
        registry,
        "decision.record",
        {"task_id": world["task"], "outcome": "noted", "rationale_md": "x"},
    )
    assert noted["decision"]["task_id"] == world["task"] and noted["proposal"] is None


BAD_CALLS: list[tuple[str, dict[str, Any], str]] = [
    ("task.create", {}, "invalid_argument"),
    ("task.create", {"title": ""}, "invalid_argument"),
    ("task.create", {"title": "x" * 1001}, "invalid_argument"),
    ("task.create", {"title": "ok", "body_md": "x" * 200_001}, "invalid_argument"),
    ("task.create", {"title": "ok", "priority": "asap"}, "invalid_argument"),
    ("task.create", {"title": "ok", "extra": 1}, "invalid_argument"),
    ("task.create", {"title": 5}, "invalid_argument"),
    ("task.get", {"task_id": "T-missing"}, "not_found"),
    ("task.get", {"task_id": "bad id!"}, "invalid_argument"),
    ("task.list", {"limit": 0}, "invalid_argument"),
    ("task.list", {"status": "weird"}, "invalid_argument"),
    (
        "proposal.create",
        {"task_id": "{task}", "agent_id": "implementer-1", "title": "t", "patch": "nope"},
        "invalid_argument",
    ),
    (
        "proposal.create",
        {
            "task_id": "{task}",
            "agent_id": "implementer-1",
            "title": "t",
            "patch": DIFF.replace("hello", "../x"),
        },
        "invalid_argument",
    ),
    (
        "proposal.create",
        {
            "task_id": "{task}",
            "agent_id": "implementer-1",
            "title": "t",
            "patch": DIFF.replace("hello.txt", "/etc/passwd"),
        },
        "invalid_argument",
    ),
    (
        "proposal.create",
        {"task_id": "{task}", "agent_id": "implementer-1", "title": "t", "patch": "x\x00" + DIFF},
        "invalid_argument",
    ),
    (
        "proposal.create",
        {"task_id": "{task}", "agent_id": "implementer-1", "title": "t", "patch": DIFF + "+" * (1 << 20)},
        "invalid_argument",
    ),
    ("proposal.create", {"task_id": "{task}", "agent_id": "ghost", "title": "t", "patch": DIFF}, "forbidden"),
    (
        "proposal.create",
        {"task_id": "{task}", "agent_id": "memory-oracle-1", "title": "t", "patch": DIFF},
        "forbidden",
    ),
    (
        "proposal.create",
        {"task_id": "T-missing", "agent_id": "implementer-1", "title": "t", "patch": DIFF},
        "not_found",
    ),
    ("proposal.create", {"task_id": "{task}", "agent_id": "implementer-1", "title": "t"}, "invalid_argument"),
    (
        "proposal.create",
        {"task_id": "{task}", "agent_id": "implementer-1", "title": "t", "patch": DIFF, "risk": "x"},
        "invalid_argument",
    ),
    (
        "proposal.create",
        {
            "task_id": "{task}",
            "agent_id": "implementer-1",
            "title": "t",
            "patch": DIFF,
            "expected_tests": [1],
        },
        "invalid_argument",
    ),
    ("proposal.attach_patch", {"proposal_id": "{proposal}", "patch": "garbage\n"}, "invalid_argument"),
    ("proposal.attach_patch", {"proposal_id": "P-missing", "patch": DIFF}, "not_found"),
    ("proposal.get", {"proposal_id": "P-missing"}, "not_found"),
    ("proposal.get", {}, "invalid_argument"),
    ("proposal.list", {"status": "merged"}, "invalid_argument"),
    ("proposal.request_review", {"proposal_id": "{proposal}"}, "conflict"),
    ("proposal.request_review", {"proposal_id": "P-missing"}, "not_found"),
    ("proposal.timeline", {"proposal_id": "P-missing"}, "not_found"),
    (
        "vote.cast",
        {"proposal_id": "{proposal}", "agent_id": "reviewer-2", "vote": "lgtm", "reason_md": "r"},
        "invalid_argument",
    ),
    (
        "vote.cast",
        {"proposal_id": "{proposal}", "agent_id": "implementer-1", "vote": "approve", "reason_md": "r"},
        "forbidden",
    ),
    (
        "vote.cast",
        {"proposal_id": "{proposal}", "agent_id": "memory-oracle-1", "vote": "approve", "reason_md": "r"},
        "forbidden",
    ),
    (
        "vote.cast",
        {"proposal_id": "{proposal}", "agent_id": "ghost", "vote": "approve", "reason_md": "r"},
        "forbidden",
    ),
    (
        "vote.cast",
        {"proposal_id": "{proposal}", "agent_id": "security-1", "vote": "approve", "reason_md": "r"},
        "forbidden",
    ),
    (
        "vote.cast",
        {"proposal_id": "{pending}", "agent_id": "reviewer-1", "vote": "approve", "reason_md": "r"},
        "conflict",
    ),
    (
        "vote.cast",
        {"proposal_id": "{proposal}", "agent_id": "reviewer-2", "vote": "approve", "reason_md": ""},
        "invalid_argument",
    ),
    (
        "vote.cast",
        {"proposal_id": "{proposal}", "agent_id": "reviewer-2", "vote": "approve"},
        "invalid_argument",
    ),
    ("vote.list", {"proposal_id": "P-missing"}, "not_found"),
    ("vote.list", {"proposal_id": "{proposal}", "patch_version": 0}, "invalid_argument"),
    ("vote.list", {"proposal_id": "{proposal}", "patch_version": 2**63}, "invalid_argument"),
    ("decision.record", {"outcome": "noted", "rationale_md": "x"}, "invalid_argument"),
    (
        "decision.record",
        {"proposal_id": "{proposal}", "outcome": "maybe", "rationale_md": "x"},
        "invalid_argument",
    ),
    (
        "decision.record",
        {"proposal_id": "{proposal}", "outcome": "accepted", "rationale_md": "x"},
        "conflict",
    ),
    (
        "decision.record",
        {"proposal_id": "{proposal}", "outcome": "noted", "rationale_md": "x", "supersedes": "D-missing"},
        "not_found",
    ),
    (
        "decision.record",
        {"proposal_id": "{proposal}", "task_id": "T-other", "outcome": "noted", "rationale_md": "x"},
        "invalid_argument",
    ),
    ("patch.reject", {"proposal_id": "{proposal}", "reason_md": "  "}, "invalid_argument"),
    ("patch.reject", {"proposal_id": "P-missing", "reason_md": "no"}, "not_found"),
    ("patch.validate", {"proposal_id": "{proposal}", "version": 9}, "not_found"),
    ("patch.validate", {"proposal_id": "{proposal}", "version": "1"}, "invalid_argument"),
    ("patch.validate", {"proposal_id": "{proposal}", "version": 2**63}, "invalid_argument"),
    ("patch.apply", {"proposal_id": "{proposal}"}, "conflict"),
    ("patch.apply", {"proposal_id": "P-missing"}, "not_found"),
]


def _fill(args: dict[str, Any], world: dict[str, str]) -> dict[str, Any]:
    return {k: v.format(**world) if isinstance(v, str) and v.startswith("{") else v for k, v in args.items()}


def test_every_work_tool_has_bad_input_cases() -> None:
    assert {name for name, _, _ in BAD_CALLS} == WORK_TOOLS


@pytest.mark.parametrize(
    ("name", "args", "code"), BAD_CALLS, ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(BAD_CALLS)]
)
async def test_bad_input_is_a_structured_error_and_changes_nothing(
    services: Services,
    registry: ToolRegistry,
    world: dict[str, str],
    name: str,
    args: dict[str, Any],
    code: str,
) -> None:
    before = project_snapshot(services.store.paths)
    body = await _call(services, registry, name, _fill(args, world))
    assert set(body) == {"error"} and body["error"]["code"] == code, body
    assert isinstance(body["error"]["message"], str) and "Traceback" not in body["error"]["message"]
    assert project_snapshot(services.store.paths) == before


_values = st.one_of(
    st.none(), st.booleans(), st.integers(), st.text(max_size=30), st.lists(st.text(max_size=5), max_size=3),
    st.sampled_from(["P-missing", "T-missing", "reviewer-1", "approve", "veto", "noted", DIFF, "../x"]),
)  # fmt: skip


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    name=st.sampled_from(sorted(WORK_TOOLS - {"task.create", "proposal.create", "decision.record"})),
    args=st.dictionaries(
        st.sampled_from(["proposal_id", "task_id", "agent_id", "vote", "reason_md", "patch", "version", "x"]),
        _values,
        max_size=4,
    ),
)
async def test_fuzzed_arguments_get_structured_errors_only(
    services: Services, registry: ToolRegistry, name: str, args: dict[str, Any]
) -> None:
    before = project_snapshot(services.store.paths)
    body = await _call(services, registry, name, args)
    if "error" in body:
        assert body["error"]["code"] != "internal", body
        assert project_snapshot(services.store.paths) == before


async def test_a_database_failure_tells_the_caller_nothing_of_the_schema(
    services: Services, registry: ToolRegistry, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A role container is a caller too: a failing read answers `internal` with a fixed message,
    # while the operator's log keeps the database's own error (the backend's driver) with its traceback.
    def broken(*args: object, **kwargs: object) -> object:
        if services.store.db.backend == "postgresql":
            import psycopg.errors

            raise psycopg.errors.UndefinedTable('relation "secret_schema_detail" does not exist')
        raise sqlite3.OperationalError("no such table: secret_schema_detail")

    monkeypatch.setattr(services.store.tasks, "list", broken)
    with structlog.testing.capture_logs() as logged:
        body = await _call(services, registry, "task.list", {})
    assert body["error"]["code"] == "internal"
    assert "secret_schema_detail" not in json.dumps(body)
    failed = [line for line in logged if line["event"] == "tool.failed"]
    assert failed and failed[0]["log_level"] == "error" and failed[0].get("exc_info")
