"""The judge provider end to end: through the benchmark's fake tools and the real dispatch."""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks.oracle_quality.fake_tools import FakeOracleTools
from benchmarks.oracle_quality.loader import MemorySpec, Scenario
from capabilities.services import Services
from roles.providers.judge import PROVIDER_LABEL, run_judge
from store import Store
from tests.capabilities.oracle_helpers import DispatchCaller, build_world

pytestmark = pytest.mark.anyio

_TLS = MemorySpec("M-tls", "decision", "TLS stays on", "Never disable certificate checks: no `verify=False`.")
_PII = MemorySpec("M-pii", "constraint", "No personal data in logs", "Logs never contain personal data.")
_STALE = MemorySpec("M-old", "decision", "Old", "Never call `requests.get`.", status="stale")
_FOREIGN = MemorySpec("M-far", "decision", "Elsewhere", "Never use `verify=False`.", scope="T-other")
_NOTE = MemorySpec("M-note", "note", "Note", "We never use verify=False and never log emails.")


def _scenario(diff: str, *memory: MemorySpec) -> Scenario:
    return Scenario(
        id="t", klass="keyword", split="dev", language="python", task="T-1", title="t", diff=diff,
        expected=frozenset(), memory=memory or (_TLS, _PII, _STALE, _FOREIGN, _NOTE), source="test",
    )  # fmt: skip


def _diff(*lines: str, path: str = "app/client.py") -> str:
    body = "\n".join(lines)
    return f"--- a/{path}\n+++ b/{path}\n@@ -1,3 +1,3 @@\n import requests\n{body}\n"


async def _warnings(diff: str, *memory: MemorySpec) -> tuple[FakeOracleTools, list[dict[str, Any]]]:
    tools = FakeOracleTools(_scenario(diff, *memory))
    report = await run_judge(tools)
    assert report.summary_memory_id is not None
    return tools, [w["payload"] for w in tools.warnings]


async def test_an_added_forbidden_construct_warns_once_with_quotes() -> None:
    tools, warnings = await _warnings(_diff("-r = requests.get(u)", "+r = requests.get(u, verify=False)"))
    assert [w["cited_memory_ids"] for w in warnings] == [["M-tls"]]
    message = warnings[0]["message_md"]
    assert "`app/client.py:2`" in message and "verify=False" in message
    assert "> Never disable certificate checks" in message  # the decision sentence it rests on
    assert "confidence 0.9" in message and PROVIDER_LABEL in message
    assert warnings[0]["severity"] == "critical"
    summary = tools.recorded[0]
    assert (summary["scope"], summary["kind"], summary["source_event_id"]) == ("T-1", "summary", 2)


@pytest.mark.parametrize(
    "lines",
    [
        ("-r = requests.get(u, verify=False)", "+r = requests.get(u, verify=CA_BUNDLE)"),  # removed
        ("+# never pass verify=False here", "+r = requests.get(u)"),  # a comment
        ('+raise ValueError("verify=False is refused")',),  # a string mention
        ("+class RedactEmails(logging.Filter):", "+    pattern = mask_email(record.email)"),  # a mask
        ('+log.info("signup %s", mask_email(user.email))',),  # masked before logging
        ('+log.info("sent %d emails", count)',),  # the word, not the data
    ],
)
async def test_traps_do_not_warn(lines: tuple[str, ...]) -> None:
    _, warnings = await _warnings(_diff(*lines))
    assert warnings == []


async def test_tests_and_docs_mentions_do_not_warn() -> None:
    _, in_test = await _warnings(_diff("+r = requests.get(u, verify=False)", path="tests/test_client.py"))
    _, in_docs = await _warnings(_diff("+Never call requests with verify=False.", path="docs/http.md"))
    assert in_test == [] and in_docs == []


async def test_a_semantic_violation_warns() -> None:
    _, warnings = await _warnings(_diff('+log.info("new user %s", user.email)'))
    assert [w["cited_memory_ids"] for w in warnings] == [["M-pii"]]
    assert warnings[0]["severity"] in ("warning", "critical")


async def test_stale_foreign_and_notes_are_never_cited() -> None:
    _, warnings = await _warnings(_diff("+r = requests.get(u, verify=False)"), _STALE, _FOREIGN, _NOTE)
    assert warnings == []


async def test_a_failed_check_is_certain() -> None:
    check = {"kind": "forbid_added", "pattern": r"\bprint\(", "paths": ["app/*"], "message": "Use logging."}
    entry = MemorySpec("M-chk", "constraint", "Logging only", "Output goes through logging.", checks=(check,))
    _, warnings = await _warnings(_diff('+print("hello")'), entry)
    assert [w["cited_memory_ids"] for w in warnings] == [["M-chk"]]
    assert warnings[0]["severity"] == "critical"
    assert "certain" in warnings[0]["message_md"] and "`app/client.py:2`" in warnings[0]["message_md"]


async def test_a_broken_check_is_noted_not_fatal() -> None:
    entry = MemorySpec(
        "M-bad", "constraint", "x", "x", checks=({"kind": "forbid_added", "pattern": "(a+)+"},)
    )
    tools = FakeOracleTools(_scenario(_diff("+x = 1"), entry))
    report = await run_judge(tools)
    assert report.warnings == [] and "checks ignored" in report.notes[0]


async def test_over_the_real_tools(store: Store) -> None:
    world = build_world(store)
    report = await run_judge(DispatchCaller(Services(store=store), world.principal))
    cited = {i for w in report.warnings for i in w["payload"]["cited_memory_ids"]}
    assert world.task_memory in cited  # "No raw SQL." against an f-string query
    assert cited <= {world.task_memory, world.project_memory}
    summary = store.memory.get(str(report.summary_memory_id))
    assert (summary.scope, summary.kind) == (world.task_id, "summary")
