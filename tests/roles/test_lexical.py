"""The lexical provider over the real oracle tools, called in-process with a real capability."""

from __future__ import annotations

import pytest

from capabilities.services import Services
from roles.providers.lexical import PROVIDER_LABEL, extract_patch_terms, run_lexical, words_of
from store import Store
from tests.capabilities.oracle_helpers import DispatchCaller, build_world

pytestmark = pytest.mark.anyio


def test_words_split_identifiers_and_drop_noise() -> None:
    assert words_of("db.query_builder.select") >= {"query_builder", "query", "builder"}
    assert "select" not in words_of("SELECT * FROM users")  # SQL keywords become the concept "sql"
    assert words_of("parseHTTPResponse") >= {"parsehttpresponse", "parse", "http", "response"}
    assert words_of("the and for if x1 42") == set()


def test_patch_terms_come_from_changed_lines_paths_and_raw_sql() -> None:
    diff = (
        "--- a/app/users.py\n+++ b/app/users.py\n@@ -1,2 +1,2 @@\n def untouched_context():\n"
        '-    return builder.get(user)\n+    cursor.execute(f"SELECT * FROM users WHERE id = {uid}")\n'
    )
    terms = extract_patch_terms(diff, ["app/users.py"])
    assert {"builder", "cursor", "execute", "sql", "users", "app"} <= terms
    assert "untouched_context" not in terms  # context lines are not changes


async def test_warns_once_citing_the_matching_decision(store: Store) -> None:
    world = build_world(store)
    report = await run_lexical(DispatchCaller(Services(store=store), world.principal))

    assert [w["payload"]["cited_memory_ids"] for w in report.warnings] == [[world.task_memory]]
    message = report.warnings[0]["payload"]["message_md"]
    assert PROVIDER_LABEL in message
    assert "contradicts" in message  # ... it says it did NOT judge that
    summary = store.memory.get(str(report.summary_memory_id))
    assert (summary.scope, summary.kind, summary.source_proposal_id) == (
        world.task_id,
        "summary",
        world.proposal_id,
    )
    # The summary cites a history event of the task, as the prompt asks.
    cited = store.db.read(
        lambda c: c.execute("SELECT task_id FROM events WHERE id = ?", (summary.source_event_id,)).fetchone()
    )
    assert cited is not None
    assert cited["task_id"] == world.task_id
    for absent in (world.stale_memory, world.foreign_memory, world.project_memory):
        assert all(absent not in w["payload"]["cited_memory_ids"] for w in report.warnings)


async def test_no_overlap_means_no_warning_but_still_a_summary(store: Store) -> None:
    world = build_world(store)
    store.memory.mark_stale(memory_id=world.task_memory, reason_md="dropped", actor="op")
    report = await run_lexical(DispatchCaller(Services(store=store), world.principal))
    assert report.warnings == []
    assert report.summary_memory_id is not None
