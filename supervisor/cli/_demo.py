"""``roundtable demo``: the story of Roundtable, end to end, in a scratch project.

1. initialise a scratch project and record two decisions in project memory;
2. create a task and a proposal whose patch adds raw SQL, contradicting one of them;
3. request review: the round lists the voting reviewers and the MemoryOracle, launched by nobody;
4. launch the MemoryOracle explicitly, in its hardened container, with the ``judge`` provider;
5. tell it (:func:`supervisor.cli._demo_story.render_demo`): the warning, the decision it cites,
   and the unrelated decision it left alone. ``--json`` answers the whole timeline too.

Every step goes through the same tools an MCP client calls, as the local operator. Only two lines
go to stderr (the scratch directory, and the launch starting): the story is on stdout.
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


_DECISIONS = (
    {
        "title": "All SQL goes through the query builder",
        "body_md": "Never build SQL strings by hand: use db.query_builder so every value is bound.",
        "importance": 90,
    },
    {"title": "Logs are structured JSON", "body_md": "Use structlog."},
)


async def run_demo(root: str | None, *, keep: bool = False) -> dict[str, Any]:
    """Run the demo in ``root`` (or a fresh temporary directory, removed afterwards)."""
    scratch = Path(root) if root else Path(tempfile.mkdtemp(prefix="roundtable-demo-"))
    try:
        paths, _ = init_project(scratch)
        (paths.root / "app").mkdir(exist_ok=True)
        (paths.root / "app" / "users.py").write_text(_ORIGINAL, encoding="utf-8")
        store = open_store(paths)
        services = Services(store=store)
        kept = "kept (--keep)" if keep or root else "removed afterwards; --keep keeps it"
        _say(f"scratch project {paths.root} ({kept})")
        try:
            decision, unrelated = [
                (
                    await operator_call(
                        services, "memory.record", {"scope": "project", "kind": "decision", **fields}
                    )
                )["entry"]
                for fields in _DECISIONS
            ]
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
            await operator_call(services, "proposal.request_review", {"proposal_id": proposal_id})
            _say("launching the MemoryOracle in its hardened container (judge provider)...")
            async with Supervisor(store) as supervisor:
                result = await supervisor.launch_role("memory_oracle", proposal_id, provider="judge")
            timeline = await operator_call(services, "proposal.timeline", {"proposal_id": proposal_id})
        finally:
            store.close()
        return {
            "root": str(paths.root),
            "proposal_id": proposal_id,
            "decision": decision,
            "unrelated_decision": unrelated,
            "launch": result.to_dict(),
            "timeline": timeline,
            # The JSON's message: the whole timeline (the readable output is render_demo's story).
            "message": render_timeline(timeline)
            + "\n\nThe MemoryOracle's warnings are advice; reviewers decide.",
        }
    finally:
        if not keep and root is None:
            shutil.rmtree(scratch, ignore_errors=True)
