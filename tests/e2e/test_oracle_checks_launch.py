"""Executable checks end to end: the supervisor, a real container, the ``lexical`` provider.

The runner's checks step evaluates the recorded checks before the provider: the patch that adds
the forbidden line is warned ``critical`` and certain, citing the entry; the patch that removes
it is not.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

from store import Store
from store.launches._store import LaunchStatus
from supervisor._supervisor import Supervisor
from tests.e2e.conftest import ReviewScene, operator_call
from tests.e2e.test_oracle_launch import _assert_cleaned_up, _rows

pytestmark = [pytest.mark.anyio, pytest.mark.docker]

CHECK = {
    "kind": "forbid_added",
    "pattern": r"\.execute\(f\"",
    "paths": ["app/"],
    "message": "No f-string SQL.",
}
_REVERSED = """\
--- a/app/users.py
+++ b/app/users.py
@@ -1,4 +1,2 @@
 def find_user(db, name):
-    cursor = db.connection.cursor()
-    cursor.execute(f"SELECT * FROM users WHERE name = '{name}'")
-    return cursor.fetchone()
+    return db.query_builder.select("users").where(name=name).one()
"""
"""The demo patch undone: it removes the forbidden line."""


async def _certain_warnings(
    store: Store, docker_sdk: Any, proposal_id: str, entry_id: str
) -> list[dict[str, Any]]:
    async with Supervisor(store) as supervisor:
        with anyio.fail_after(120):
            result = await supervisor.launch_role("memory_oracle", proposal_id, provider="lexical")
    assert result.launch.status is LaunchStatus.EXITED, result.launch.to_dict(with_log=True)
    _assert_cleaned_up(store, docker_sdk, result.launch.id)
    rows = _rows(store, "SELECT payload FROM events WHERE type = 'memory.oracle_warning' AND proposal_id = ?",
                 proposal_id)  # fmt: skip
    payloads = [json.loads(row["payload"]) for row in rows]
    return [
        p for p in payloads if p["message_md"].startswith("**Certain:") and entry_id in p["cited_memory_ids"]
    ]


async def test_a_failed_check_is_a_certain_critical_warning_and_a_removal_is_not(
    scene: ReviewScene, store: Store, docker_sdk: Any, role_image_tag: str
) -> None:
    recorded = await operator_call(
        store, "memory.record",
        {"scope": "project", "kind": "constraint", "title": "Queries are parameterised",
         "body_md": "Never format values into SQL.", "checks": [CHECK]},
    )  # fmt: skip
    entry_id = recorded["entry"]["id"]

    (warned,) = await _certain_warnings(store, docker_sdk, scene.proposal_id, entry_id)
    assert warned["severity"] == "critical" and warned["cited_memory_ids"] == [entry_id]
    assert "confidence 1.00" in warned["message_md"] and "> No f-string SQL." in warned["message_md"]
    assert "`app/users.py:3`" in warned["message_md"] and "cursor.execute(f" in warned["message_md"]

    proposal = await operator_call(
        store, "proposal.create",
        {"task_id": scene.task_id, "agent_id": "implementer-1", "title": "Back to the builder",
         "patch": _REVERSED},
    )  # fmt: skip
    reverted = proposal["proposal"]["id"]
    await operator_call(store, "proposal.request_review", {"proposal_id": reverted})
    assert await _certain_warnings(store, docker_sdk, reverted, entry_id) == []
