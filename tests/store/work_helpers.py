"""Shared fixtures data for the work tests: small diffs against a known file tree."""

from __future__ import annotations

from pathlib import Path

from store import Store
from store.access import GrantRecord, IssuedToken
from store.work import Task

__all__ = ["DIFF", "DIFF_V2", "SECURITY_DIFF", "mint_oracle_grant", "new_task", "seed_files"]

DIFF = """\
diff --git a/hello.txt b/hello.txt
--- a/hello.txt
+++ b/hello.txt
@@ -1,3 +1,3 @@
 one
-two
+TWO
 three
"""

DIFF_V2 = """\
diff --git a/hello.txt b/hello.txt
--- a/hello.txt
+++ b/hello.txt
@@ -1,3 +1,4 @@
 one
-two
+TWO
 three
+four
"""

SECURITY_DIFF = """\
diff --git a/auth/login.py b/auth/login.py
new file mode 100644
--- /dev/null
+++ b/auth/login.py
@@ -0,0 +1 @@
+ALLOW_ALL = False
"""


def seed_files(root: Path) -> None:
    """The project files the diffs above apply to."""
    (root / "hello.txt").write_text("one\ntwo\nthree\n")


def new_task(store: Store, title: str = "Shout the second line") -> Task:
    """A fresh task."""
    return store.tasks.create(title=title, actor="op")


def mint_oracle_grant(store: Store, proposal_id: str, tool: str = "memory.query") -> IssuedToken[GrantRecord]:
    """A MemoryOracle capability on ``proposal_id`` (five minutes, one tool)."""
    return store.grants.mint_grant(
        proposal_id=proposal_id,
        role="memory_oracle",
        agent_id="memory-oracle-1",
        tools=frozenset({tool}),
        ttl_seconds=300,
        actor="op",
    )
