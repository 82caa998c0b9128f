"""The work commands as a user runs them: real subprocesses on a real project."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from capabilities.mcp import call_tool
from capabilities.mcp.tools import build_registry
from capabilities.services import Services
from store import ProjectPaths, Store
from store.db import parse_store_url
from supervisor.cli._timeline_text import render_timeline
from tests.capabilities.oracle_helpers import build_world
from tests.helpers import project_snapshot
from tests.store.work_helpers import DIFF, DIFF_V2, seed_files


class Cli:
    """Runs ``roundtable ... --json`` in a project directory."""

    def __init__(self, argv: list[str], root: Path):
        self.argv = argv
        self.root = root

    def run(
        self, *args: str, json_out: bool = True, stdin: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        extra = ["--json"] if json_out else []
        return subprocess.run(
            [*self.argv, *args, *extra],
            cwd=self.root,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    def ok(self, *args: str) -> dict[str, Any]:
        result = self.run(*args)
        assert result.returncode == 0, (result.stdout, result.stderr)
        body: dict[str, Any] = json.loads(result.stdout)
        return body

    def error(self, *args: str, code: str) -> dict[str, Any]:
        result = self.run(*args)
        body: dict[str, Any] = json.loads(result.stdout)
        assert result.returncode == 1 and body["error"]["code"] == code, (result.stdout, result.stderr)
        return body


@pytest.fixture
def cli(tmp_path: Path, roundtable_argv: list[str]) -> Cli:
    root = tmp_path / "proj"
    root.mkdir()
    seed_files(root)
    (root / "v1.diff").write_text(DIFF)
    (root / "v2.diff").write_text(DIFF_V2)
    runner = Cli(roundtable_argv, root)
    runner.ok("init")
    return runner


def test_propose_review_vote_validate_apply_and_timeline(cli: Cli) -> None:
    task = cli.ok("task", "create", "--title", "Shout", "--body", "Make line two loud")["task"]
    created = cli.ok(
        "proposal",
        "create",
        "--task",
        task["id"],
        "--agent",
        "implementer-1",
        "--title",
        "Loud",
        "--patch",
        "v1.diff",
        "--summary",
        "two -> TWO",
        "--risk",
        "normal",
    )
    proposal, patch = created["proposal"], created["patch"]
    pid = proposal["id"]
    assert patch["version"] == 1 and patch["files"] == ["hello.txt"]
    review = cli.ok("review", "request", pid)
    assert [c["agent_id"] for c in review["round"]["candidates"]] == ["reviewer-1", "reviewer-2"]
    assert review["round"]["advisory"][0]["launched"] is False
    first = cli.ok("vote", "cast", pid, "--agent", "reviewer-1", "--vote", "approve", "--reason", "ok")
    assert set(first) >= {"vote"} and first["vote"]["counts"] is True
    second = cli.ok("vote", "cast", pid, "--agent", "reviewer-2", "--vote", "approve", "--reason", "ok")
    assert second["proposal_status"] == "accepted"
    assert cli.ok("patch", "validate", pid)["ok"] is True
    applied = cli.ok("patch", "apply", pid)
    assert applied["transaction"]["status"] == "applied"
    assert (cli.root / "hello.txt").read_text() == "one\nTWO\nthree\n"
    timeline = cli.ok("timeline", pid)
    assert set(timeline) == {"proposal", "events"}
    assert [e["type"] for e in timeline["events"]][-2:] == ["proposal.apply_started", "proposal.applied"]
    text = cli.run("timeline", pid, json_out=False)
    assert (
        text.returncode == 0
        and "proposal.applied" in text.stdout
        and "reviewer-2 (Reviewer) approve" in text.stdout
    )
    assert cli.ok("proposal", "get", pid)["proposal"]["status"] == "applied"
    assert [p["id"] for p in cli.ok("proposal", "list", "--task", task["id"])["proposals"]] == [pid]
    assert len(cli.ok("task", "list")["tasks"]) == 1
    assert len(cli.ok("vote", "list", pid, "--counting")["votes"]) == 2


def test_new_version_voids_votes_veto_blocks_author_and_unknown_words_refused(cli: Cli) -> None:
    task = cli.ok("task", "create", "--title", "Shout")["task"]
    result = cli.run(
        "proposal",
        "create",
        "--task",
        task["id"],
        "--agent",
        "implementer-1",
        "--title",
        "Loud",
        "--patch",
        "-",
        stdin=DIFF,
    )
    pid = json.loads(result.stdout)["proposal"]["id"]
    cli.ok("review", "request", pid)
    cli.ok("vote", "cast", pid, "--agent", "reviewer-1", "--vote", "approve", "--reason", "ok")
    cli.ok("vote", "cast", pid, "--agent", "reviewer-2", "--vote", "approve", "--reason", "ok")
    attached = cli.ok("proposal", "attach-patch", pid, "--patch", "v2.diff")
    assert attached["patch"]["version"] == 2 and len(attached["invalidated_vote_ids"]) == 2
    assert attached["proposal"]["status"] == "in_review"
    cli.error("patch", "apply", pid, code="conflict")
    cli.error(
        "vote",
        "cast",
        pid,
        "--agent",
        "implementer-1",
        "--vote",
        "approve",
        "--reason",
        "mine",
        code="forbidden",
    )
    cli.error(
        "vote",
        "cast",
        pid,
        "--agent",
        "reviewer-1",
        "--vote",
        "lgtm",
        "--reason",
        "x",
        code="invalid_argument",
    )
    cli.error(
        "vote",
        "cast",
        pid,
        "--agent",
        "memory-oracle-1",
        "--vote",
        "approve",
        "--reason",
        "x",
        code="forbidden",
    )
    cli.ok("vote", "cast", pid, "--agent", "reviewer-1", "--vote", "approve", "--reason", "ok")
    vetoed = cli.ok("vote", "cast", pid, "--agent", "reviewer-2", "--vote", "veto", "--reason", "unsafe")
    assert vetoed["consensus"]["blocking"][0]["vote"] == "veto" and vetoed["proposal_status"] == "in_review"
    cli.error("patch", "apply", pid, code="conflict")
    votes = cli.ok("vote", "list", pid)["votes"]
    assert [(v["patch_version"], v["counts"]) for v in votes] == [
        (1, False),
        (1, False),
        (2, True),
        (2, True),
    ]
    rejected = cli.ok("patch", "reject", pid, "--reason", "vetoed")
    assert rejected["proposal"]["status"] == "rejected"
    decided = cli.ok(
        "decision", "record", "--task", task["id"], "--outcome", "noted", "--rationale", "try again"
    )
    assert decided["decision"]["proposal_id"] is None


def test_bad_patch_files_are_refused_and_change_nothing(cli: Cli, tmp_path: Path) -> None:
    task = cli.ok("task", "create", "--title", "Shout")["task"]
    (cli.root / "latin1.diff").write_bytes(DIFF.encode().replace(b"TWO", b"T\xd6O"))
    (cli.root / "escape.diff").write_text(DIFF.replace("hello.txt", "../../etc/passwd"))
    (cli.root / "huge.diff").write_text(DIFF + "+x\n" * 400_000)
    paths = ProjectPaths(cli.root)
    before = project_snapshot(paths)
    for name in ("missing.diff", "latin1.diff", "escape.diff", "huge.diff"):
        cli.error(
            "proposal",
            "create",
            "--task",
            task["id"],
            "--agent",
            "implementer-1",
            "--title",
            "x",
            "--patch",
            name,
            code="invalid_argument",
        )
    cli.error(
        "proposal",
        "create",
        "--task",
        "T-nope",
        "--agent",
        "implementer-1",
        "--title",
        "x",
        "--patch",
        "v1.diff",
        code="not_found",
    )
    assert project_snapshot(paths) == before
    usage = cli.run("proposal", "create", "--task", task["id"])
    assert usage.returncode == 2 and json.loads(usage.stdout)["error"]["code"] == "invalid_argument"


def test_gc_removes_orphaned_patch_files(cli: Cli) -> None:
    orphan = cli.root / ".roundtable" / "patches" / "P-crashed" / "v1.diff"
    orphan.parent.mkdir()
    orphan.write_text(DIFF)
    kept = cli.ok("gc")
    if parse_store_url("") is not None:  # PostgreSQL: no orphans there, and files are not its to judge
        assert kept["patches"] == {"removed": [], "kept_recent": []} and orphan.exists()
        return
    assert kept["patches"]["kept_recent"] == [".roundtable/patches/P-crashed/v1.diff"]
    assert kept["interrupted_applies"] == []
    for grace in ("nan", "inf", "-1", "1e300"):  # float() takes each; none is a grace period
        assert "--grace" in cli.error("gc", "--grace", grace, code="invalid_argument")["error"]["message"]
    assert orphan.exists()
    assert cli.ok("gc", "--grace", "0")["patches"]["removed"] == [".roundtable/patches/P-crashed/v1.diff"]
    assert not orphan.parent.exists()


def test_text_timeline_escapes_terminal_control_sequences() -> None:
    body = {
        "proposal": {
            "id": "P-1",
            "title": "t",
            "agent_id": "a",
            "task_id": "T-1",
            "status": "in_review",
            "current_version": 1,
            "patch": {"sha256": "ab" * 32},
            "consensus": {},
        },
        "events": [
            {
                "id": 7,
                "type": "memory.oracle_warning",
                "created_at": "2026-01-01T00:00:00Z",
                "actor": "oracle",
                "payload": {"message_md": "\x1b[2Jgotcha", "severity": "critical"},
                "cited_memories": [
                    {"id": "M-1", "title": "Rule", "status": "active"},
                    {"id": "M-2", "missing": True},
                ],
            },
            {
                "id": 8,
                "type": "something.new",
                "created_at": "2026-01-01T00:00:01Z",
                "actor": "x",
                "payload": {"k": 1},
            },
        ],
    }
    text = render_timeline(body)
    assert "\x1b" not in text and "\\x1b[2Jgotcha" in text
    assert "M-1 'Rule' [active]; M-2 (missing)" in text and '{"k": 1}' in text


_LONG_TAIL = "and this is the very end of a long warning that must not be cut off"


@pytest.mark.anyio
async def test_text_timeline_shows_a_whole_warning_written_by_the_real_tool(
    store: Store, roundtable_argv: list[str]
) -> None:
    world = build_world(store)
    # The real tool refuses control characters (the store's text rule); the renderer's own escaping
    # of older events is the test above.
    message = "**Possible conflict** " + "raw SQL goes against the builder rule; " * 8 + _LONG_TAIL
    evidence = [{"path": "app/db.py", "line": 2, "text": '    return conn.execute(f"SELECT * FROM users")'}]
    outcome = await call_tool(
        Services(store=store),
        build_registry(),
        world.principal,
        "oracle.warn",
        {
            "message_md": message,
            "cited_memory_ids": [world.task_memory],
            "confidence": 0.87,
            "evidence": evidence,
            "severity": "critical",
        },
    )
    assert outcome.error is None, outcome.error
    cli = Cli(roundtable_argv, store.paths.root)
    text = cli.run("timeline", world.proposal_id, json_out=False)
    assert text.returncode == 0, text.stderr
    out = text.stdout
    assert "[critical] confidence 0.87" in out
    assert " ".join(out.split()).count(_LONG_TAIL) == 1  # wrapped, never cut
    assert 'app/db.py:2      return conn.execute(f"SELECT * FROM users")' in out
    assert f"{world.task_memory}  All SQL via the builder" in out
    body = cli.ok("timeline", world.proposal_id)
    [warning] = [e for e in body["events"] if e["type"] == "memory.oracle_warning"]
    assert warning["payload"]["confidence"] == 0.87 and warning["payload"]["evidence"] == evidence
    assert warning["payload"]["message_md"] == message
    assert {"proposal", "events"} == set(body)
