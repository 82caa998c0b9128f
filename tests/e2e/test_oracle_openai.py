"""The ``openai`` provider end to end: a real container talks to a scripted model server through the
supervisor's model gateway over the launch socket, with real tool calls; and a provider that cannot
do its job (no server, a bad answer, a spent budget) ends its launch ``failed`` with the reason."""

from __future__ import annotations

import json
import socket
from typing import Any

import anyio
import pytest

from capabilities.serving._transports import serving
from store import Store, list_events
from store.launches._store import LaunchStatus
from supervisor._supervisor import Supervisor
from supervisor.launch._spec import LABEL_SUPERVISOR, LaunchSpec, supervisor_id_for
from tests.e2e.conftest import ReviewScene, reopen, write_config
from tests.e2e.scripted_model import (
    ScriptedModel,
    Turn,
    final,
    garbage,
    server_error,
    tool_call,
    tool_calls,
    tool_results,
)

pytestmark = [pytest.mark.anyio, pytest.mark.docker]


async def test_tool_calling_loop_with_a_refused_citation_and_a_retry(
    scene: ReviewScene, docker_sdk: Any, role_image_tag: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen_results: list[list[dict[str, Any]]] = []

    def observe(body: dict[str, Any]) -> None:
        seen_results.append(tool_results(body))

    def turn1(body: dict[str, Any]) -> dict[str, Any]:
        tools = {tool["function"]["name"] for tool in body["tools"]}
        assert tools == {
            "task__history",
            "patch__inspect",
            "memory__query",
            "memory__record",
            "memory__summarize",
            "oracle__warn",
        }
        assert body["messages"][0]["role"] == "system"
        assert "cannot vote" in body["messages"][0]["content"]
        return tool_calls(tool_call("task.history", {}, "c1"), tool_call("patch.inspect", {}, "c2"))

    def turn2(body: dict[str, Any]) -> dict[str, Any]:
        observe(body)
        return tool_calls(tool_call("memory.query", {"query": "sql", "exclude_stale": True}, "c3"))

    def turn3(body: dict[str, Any]) -> dict[str, Any]:
        observe(body)
        bad = {"message_md": "Raw SQL contradicts a decision.", "cited_memory_ids": ["M-does-not-exist"]}
        return tool_calls(tool_call("oracle.warn", bad, "c4"))

    def turn4(body: dict[str, Any]) -> dict[str, Any]:
        observe(body)
        good = {"message_md": "Raw SQL bypasses the query builder.", "cited_memory_ids": [scene.decision_id]}
        summary = {
            "scope": scene.task_id,
            "kind": "summary",
            "title": "Oracle summary",
            "body_md": f"- {scene.decision_id}: all SQL through the builder",
        }
        return tool_calls(tool_call("oracle.warn", good, "c5"), tool_call("memory.record", summary, "c6"))

    def turn5(body: dict[str, Any]) -> dict[str, Any]:
        observe(body)
        return final("Warned once; summary recorded.")

    model = ScriptedModel([turn1, turn2, turn3, turn4, turn5])
    monkeypatch.setenv("RT_TEST_MODEL_KEY", "sk-test-secret-key")
    seen_env: list[dict[str, str]] = []

    def capture(spec: LaunchSpec) -> LaunchSpec:
        seen_env.append(dict(spec.environment))
        return spec

    async with serving(model.app(), host="127.0.0.1", port=0) as address:
        write_config(
            scene.paths,
            {
                "[providers.openai]base_url": json.dumps(f"{address.base_url}/v1"),
                "[providers.openai]api_key_env": '"RT_TEST_MODEL_KEY"',
                "[providers.openai]model": '"scripted"',
            },
        )
        store = reopen(scene.paths)
        try:
            async with Supervisor(store, spec_transform=capture) as supervisor:
                with anyio.fail_after(120):
                    result = await supervisor.launch_role(
                        "memory_oracle", scene.proposal_id, provider="openai"
                    )
            warnings = store.db.read(
                lambda c: c.execute(
                    "SELECT payload FROM events WHERE type = 'memory.oracle_warning'"
                ).fetchall()
            )
        finally:
            store.close()

    assert result.launch.status is LaunchStatus.EXITED, result.launch.log_tail
    assert len(model.requests) == 5
    history, patch = seen_results[0]
    assert history["proposal"]["id"] == scene.proposal_id
    assert patch["files"] == ["app/users.py"]
    assert seen_results[2][0]["error"]["code"] == "invalid_citation"  # the refused citation...
    assert "event" in seen_results[3][0]  # ...and the retry that worked
    assert [json.loads(row[0])["cited_memory_ids"] for row in warnings] == [[scene.decision_id]]
    assert result.launch.usage is not None
    assert result.launch.usage["requests"] == 5
    assert result.launch.usage["total_tokens"] == 600
    # The key went to the model server from the supervisor; the container never had it.
    assert set(model.authorizations) == {"Bearer sk-test-secret-key"}
    assert all("sk-test-secret-key" not in value for env in seen_env for value in env.values())
    assert "sk-test-secret-key" not in (result.launch.log_tail or "")
    assert all(request["model"] == "scripted" for request in model.requests)


async def test_the_token_budget_stops_the_loop_and_the_launch_fails_budget_exhausted(
    scene: ReviewScene, docker_sdk: Any, role_image_tag: str
) -> None:
    # Before issue 12 a budget cut-off ended `exited`, looking like "no concerns"; now it is a
    # failure with its reason, and the warning written before the cut-off stays (it was real).
    def warn(body: dict[str, Any]) -> dict[str, Any]:
        good = {"message_md": "Raw SQL bypasses the query builder.", "cited_memory_ids": [scene.decision_id]}
        return tool_calls(tool_call("oracle.warn", good, "c0"))

    def forever(body: dict[str, Any]) -> dict[str, Any]:
        return tool_calls(tool_call("memory.query", {"query": "sql"}, f"c{len(body['messages'])}"))

    model = ScriptedModel([warn] + [forever] * 10)
    async with serving(model.app(), host="127.0.0.1", port=0) as address:
        write_config(
            scene.paths,
            {
                "[providers.openai]base_url": json.dumps(f"{address.base_url}/v1"),
                "[providers.openai]max_tokens": "250",
            },
        )
        store: Store = reopen(scene.paths)
        try:
            async with Supervisor(store) as supervisor:
                with anyio.fail_after(120):
                    result = await supervisor.launch_role(
                        "memory_oracle", scene.proposal_id, provider="openai"
                    )
        finally:
            store.close()
    assert result.launch.status is LaunchStatus.FAILED, result.launch.log_tail
    assert result.launch.reason == "budget_exhausted"
    assert result.launch.error is not None and "250 tokens is spent" in result.launch.error
    assert len(model.requests) == 3  # 120 + 120 tokens used; the third request still had budget left
    assert result.launch.usage is not None
    assert result.launch.usage["refused"] == 1
    assert all(request["max_tokens"] <= 250 for request in model.requests)
    assert [event.payload["cited_memory_ids"] for event in result.warnings] == [[scene.decision_id]]


# -- a provider that cannot do its job: the launch ends failed with the gateway's reason ----------


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def _cli_launch(argv: list[str], scene: ReviewScene) -> dict[str, Any]:
    """``oracle launch P --wait --json --provider openai`` in a subprocess; its ``launch`` object."""
    args = ["--root", str(scene.paths.root), "oracle", "launch", scene.proposal_id, "--wait"]
    with anyio.fail_after(150):
        done = await anyio.run_process([*argv, *args, "--provider", "openai", "--json"], check=False)
    assert done.returncode == 0, done.stderr.decode()
    launch: dict[str, Any] = json.loads(done.stdout)["launch"]
    return launch


def _assert_failed_cleanly(
    scene: ReviewScene, docker_sdk: Any, launch: dict[str, Any], reason: str, error_part: str
) -> None:
    """The CLI printed the reason and error; the record, the event, the grant and Docker agree."""
    assert (launch["status"], launch["reason"]) == ("failed", reason), launch
    assert error_part in launch["error"]
    assert "sk-" not in launch["error"]
    store = reopen(scene.paths)
    try:
        record = store.launches.get(launch["id"])
        assert (record.status, record.reason, record.error) == (
            LaunchStatus.FAILED,
            reason,
            launch["error"],
        )
        events = store.db.read(lambda conn: list_events(conn, proposal_id=scene.proposal_id, limit=1000))
        failed = [e for e in events if e.type == "role.failed" and e.payload["launch_id"] == launch["id"]]
        assert [(e.payload["reason"], e.payload["error"]) for e in failed] == [(reason, launch["error"])]
        grants = store.db.read(
            lambda conn: conn.execute(
                "SELECT revoked_at FROM capability_grants WHERE launch_id = ?", (launch["id"],)
            ).fetchall()
        )
        assert grants and all(row["revoked_at"] for row in grants)  # no live grant
    finally:
        store.close()
    label = f"{LABEL_SUPERVISOR}={supervisor_id_for(scene.paths.root)}"
    assert docker_sdk.containers.list(all=True, filters={"label": label}) == []


async def test_an_unreachable_model_server_fails_the_launch_model_unavailable(
    scene: ReviewScene, docker_sdk: Any, role_image_tag: str, roundtable_argv: list[str]
) -> None:
    base_url = f"http://127.0.0.1:{_closed_port()}/v1"
    write_config(scene.paths, {"[providers.openai]base_url": json.dumps(base_url)})
    launch = await _cli_launch(roundtable_argv, scene)
    _assert_failed_cleanly(scene, docker_sdk, launch, "model_unavailable", f"{base_url} is unreachable")
    assert launch["warnings"] == []
    with anyio.fail_after(60):
        timeline = await anyio.run_process(
            [*roundtable_argv, "--root", str(scene.paths.root), "timeline", scene.proposal_id]
        )
    failed_lines = [line for line in timeline.stdout.decode().splitlines() if "role.failed" in line]
    assert len(failed_lines) == 1 and "model_unavailable" in failed_lines[0]


@pytest.mark.parametrize(
    ("turn", "error_part"),
    [(server_error, "answered 500"), (garbage, "answered 200 with no chat completion")],
    ids=["500", "garbage-200"],
)
async def test_a_bad_model_answer_fails_the_launch_model_error(
    scene: ReviewScene,
    docker_sdk: Any,
    role_image_tag: str,
    roundtable_argv: list[str],
    turn: Turn,
    error_part: str,
) -> None:
    model = ScriptedModel([turn] * 3)
    async with serving(model.app(), host="127.0.0.1", port=0) as address:
        write_config(scene.paths, {"[providers.openai]base_url": json.dumps(f"{address.base_url}/v1")})
        launch = await _cli_launch(roundtable_argv, scene)
    _assert_failed_cleanly(scene, docker_sdk, launch, "model_error", error_part)
    assert len(model.requests) == 1  # the provider stopped at the first refusal


async def test_a_spent_turn_limit_fails_the_launch_budget_exhausted(
    scene: ReviewScene, docker_sdk: Any, role_image_tag: str, roundtable_argv: list[str]
) -> None:
    def forever(body: dict[str, Any]) -> dict[str, Any]:
        return tool_calls(tool_call("task.history", {}, f"c{len(body['messages'])}"))

    model = ScriptedModel([forever] * 10)
    async with serving(model.app(), host="127.0.0.1", port=0) as address:
        write_config(
            scene.paths,
            {
                "[providers.openai]base_url": json.dumps(f"{address.base_url}/v1"),
                "[providers.openai]max_turns": "2",
            },
        )
        launch = await _cli_launch(roundtable_argv, scene)
    _assert_failed_cleanly(scene, docker_sdk, launch, "budget_exhausted", "limit of 2 model turns")
    assert len(model.requests) == 2
    assert launch["usage"]["refused"] == 1
