"""A small project for oracle tests: a task under review with its capability, and a foreign task."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from capabilities.auth import issue_capability, principal_from_record
from capabilities.mcp import call_tool
from capabilities.mcp.tools import build_registry
from capabilities.principals import Principal
from capabilities.services import Services
from roles.tools import ToolCallError
from store import Store
from store.access._grants import GrantRecord

__all__ = ["DIFF", "FOREIGN_DIFF", "OracleWorld", "build_world"]

DIFF = """\
diff --git a/app/db.py b/app/db.py
--- a/app/db.py
+++ b/app/db.py
@@ -1,2 +1,2 @@
 def load(conn, user):
-    return builder.select("users").where(id=user)
+    return conn.execute(f"SELECT * FROM users WHERE id = {user}")
"""

FOREIGN_DIFF = """\
diff --git a/other.txt b/other.txt
--- a/other.txt
+++ b/other.txt
@@ -1 +1 @@
-a
+b
"""


@dataclass(frozen=True)
class OracleWorld:
    """IDs of everything an oracle test needs."""

    task_id: str
    proposal_id: str
    grant_id: str
    token: str
    principal: Principal
    foreign_task_id: str
    foreign_proposal_id: str
    task_memory: str  # active, scope T
    project_memory: str  # active, scope "project"
    stale_memory: str  # stale, scope T
    foreign_memory: str  # active, scope of the foreign task
    foreign_event: int  # an event of the foreign task


def build_world(store: Store, *, launch_id: str | None = "L-test") -> OracleWorld:
    """Task T with proposal P in review and an oracle capability on P; task T2 with proposal P2."""
    task = store.tasks.create(title="Keep SQL behind the builder", actor="op")
    proposal, _ = store.proposals.create(
        task_id=task.id,
        agent_id="implementer-1",
        title="Raw SQL for speed",
        patch=DIFF,
        actor="implementer-1",
    )
    store.reviews.request_review(proposal_id=proposal["id"], actor="op")
    foreign_task = store.tasks.create(title="Another task", actor="op")
    foreign, _ = store.proposals.create(
        task_id=foreign_task.id,
        agent_id="implementer-2",
        title="Other",
        patch=FOREIGN_DIFF,
        actor="implementer-2",
    )
    task_memory = store.memory.record(
        scope=task.id, kind="decision", title="All SQL via the builder", body_md="No raw SQL.", actor="op"
    )
    project_memory = store.memory.record(
        scope="project", kind="constraint", title="Parameterised queries", body_md="Always.", actor="op"
    )
    stale = store.memory.record(scope=task.id, kind="fact", title="Old", body_md="Old fact.", actor="op")
    store.memory.mark_stale(memory_id=stale.id, reason_md="superseded", actor="op")
    foreign_memory = store.memory.record(
        scope=foreign_task.id, kind="decision", title="Elsewhere", body_md="Not yours.", actor="op"
    )
    foreign_event = store.db.read(
        lambda conn: int(
            conn.execute("SELECT max(id) FROM events WHERE task_id = ?", (foreign_task.id,)).fetchone()[0]
        )
    )
    issued = issue_capability(
        store,
        proposal_id=proposal["id"],
        role="memory_oracle",
        actor="op",
        ttl_seconds=3600,
        launch_id=launch_id,
    )
    record = store.grants.authenticate(issued.token)
    assert isinstance(record, GrantRecord)
    return OracleWorld(
        task_id=task.id,
        proposal_id=proposal["id"],
        grant_id=issued.record.id,
        token=issued.token,
        principal=principal_from_record(record),
        foreign_task_id=foreign_task.id,
        foreign_proposal_id=foreign["id"],
        task_memory=task_memory.id,
        project_memory=project_memory.id,
        stale_memory=stale.id,
        foreign_memory=foreign_memory.id,
        foreign_event=foreign_event,
    )


@dataclass
class DispatchCaller:
    """A ToolCaller that goes through the same dispatch as every transport."""

    services: Services
    principal: Principal

    async def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        outcome = await call_tool(self.services, build_registry(), self.principal, tool, arguments)
        if outcome.error is not None:
            raise ToolCallError(tool, outcome.error.code, outcome.error.message)
        assert outcome.result is not None
        return outcome.result
