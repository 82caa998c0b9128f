"""``roundtable demo``: the story of Roundtable, end to end, in a scratch project.

1. initialise a scratch project and record two decisions in project memory;
2. create a task and a proposal whose patch adds raw SQL, contradicting one of them;
3. request review: the round lists the voting reviewers and the MemoryOracle, launched by nobody;
4. launch the MemoryOracle explicitly, in its hardened container, with the ``lexical`` provider;
5. print the proposal's timeline, with the oracle's warning and the decision it cites.

Every step goes through the same tools an MCP client calls, as the local operator.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from capabilities.services import Services
from store import init_project, open_store
from supervisor import Supervisor
from supervisor.cli._project import operator_call
from supervisor.cli._timeline_text import render_timeline

__all__ = ["DEMO_PATCH", "run_demo"]

_ORIGINAL = 'def find_user(db, name):\n    return db.query_builder.select("users").where(name=name).one()\n'

DEMO_PATCH = """\
--- a/app/users.py
+++ b/app/users.py
@@ -1,2 +1,4 @@
 def find_user(db, name):
-    return db.query_builder.select("users").where(name=name).one()
+    cursor = db.connection.cursor()
+    cursor.execute(f"SELECT * FROM users WHERE name = '{name}'")
+    return cursor.fetchone()
"""


def _say(text: str) -> None:
    sys.stderr.write(f"demo: {text}\n")
    sys.stderr.flush()


async def run_demo(root: str | None, *, keep: bool = False) -> dict[str, Any]:
    """Run the demo in ``root`` (or a fresh temporary directory, removed afterwards)."""
    scratch = Path(root) if root else Path(tempfile.mkdtemp(prefix="roundtable-demo-"))
    try:
        paths, _ = init_project(scratch)
        (paths.root / "app").mkdir(exist_ok=True)
        (paths.root / "app" / "users.py").write_text(_ORIGINAL, encoding="utf-8")
        store = open_store(paths)
        services = Services(store=store)
        try:
            _say(f"scratch project: {paths.root}")
            decision = (
                await operator_call(
                    services,
                    "memory.record",
                    {
                        "scope": "project",
                        "kind": "decision",
                        "title": "All SQL goes through the query builder",
                        "body_md": "Never build SQL strings by hand: use db.query_builder "
                        "so every value is bound.",
                        "importance": 90,
                    },
                )
            )["entry"]
            await operator_call(
                services,
                "memory.record",
                {
                    "scope": "project",
                    "kind": "decision",
                    "title": "Logs are structured JSON",
                    "body_md": "Use structlog.",
                },
            )
            _say(f"recorded decision {decision['id']}: {decision['title']}")
            task = (await operator_call(services, "task.create", {"title": "Look users up by name"}))["task"]
            created = await operator_call(
                services,
                "proposal.create",
                {
                    "task_id": task["id"],
                    "agent_id": "implementer-1",
                    "title": "Faster user lookup with a direct query",
                    "patch": DEMO_PATCH,
                    "summary_md": "Skip the query builder for speed.",
                },
            )
            proposal_id = created["proposal"]["id"]
            _say(f"proposal {proposal_id} adds raw SQL to app/users.py")
            await operator_call(services, "proposal.request_review", {"proposal_id": proposal_id})
            _say("review requested: reviewer-1 and reviewer-2 may vote; the MemoryOracle is advisory")

            def progress(phase: str, details: dict[str, Any]) -> None:
                _say(f"oracle {phase} {details.get('launch_id', '')}")

            async with Supervisor(store) as supervisor:
                result = await supervisor.launch_role(
                    "memory_oracle", proposal_id, provider="judge", on_phase=progress
                )
            timeline = await operator_call(services, "proposal.timeline", {"proposal_id": proposal_id})
        finally:
            store.close()
        _say(f"launch {result.launch.id} {result.launch.status}; {len(result.warnings)} warning(s)")
        return {
            "root": str(paths.root),
            "proposal_id": proposal_id,
            "decision": decision,
            "launch": result.to_dict(),
            "timeline": timeline,
            # The timeline shows each warning whole, with the titles it cites: nothing to repeat.
            "message": render_timeline(timeline)
            + "\n\nThe MemoryOracle's warnings are advice; reviewers decide.",
        }
    finally:
        if not keep and root is None:
            shutil.rmtree(scratch, ignore_errors=True)
