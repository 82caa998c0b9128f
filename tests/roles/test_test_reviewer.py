"""The test reviewer on the host: ``python -m roles.test_reviewer`` in a subprocess, against a real MCP
server on a Unix socket bound to a real Reviewer capability grant, reviewing a workspace staged from a
real git repository; then its parts (extraction, the command, the reason) on their own."""

from __future__ import annotations

import hashlib
import io
import json
import sys
import tarfile
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest

from capabilities.services import Services
from capabilities.serving import LaunchSocketApp, serve_launch_socket
from roles.test_reviewer import (
    EXIT_REFUSED,
    CommandResult,
    Manifest,
    WorkspaceRefused,
    command_environment,
    extract_workspace,
    reason_markdown,
    run_command,
)
from store import Store
from supervisor.review import REVIEW_MANIFEST, WORKSPACE_TAR, StagedWorkspace, stage_review_workspace
from tests.supervisor.review.test_workspace import DOES_NOT_APPLY, make_repo

pytestmark = pytest.mark.anyio

PYTEST = ["python", "-m", "pytest", "-q", "-p", "no:cacheprovider"]
REVIEWER_TOOLS = frozenset({"patch.inspect", "vote.cast"})
APP = "def add(a, b):\n    return a + b\n"
TESTS = """\
import os

from app import add


def test_add():
    assert add(2, 2) == 4


def test_the_environment_is_minimal():
    ours = set(os.environ) - {"PYTEST_CURRENT_TEST", "PYTEST_VERSION"}  # what pytest sets itself
    assert sorted(ours) == ["HOME", "LANG", "PATH", "PYTHONDONTWRITEBYTECODE", "TMPDIR"]
"""


def _diff(old: str, new: str) -> str:
    head = "diff --git a/app.py b/app.py\n--- a/app.py\n+++ b/app.py\n@@ -1,2 +1,2 @@\n"
    return f"{head} def add(a, b):\n-{old}\n+{new}\n"


PASSING = _diff("    return a + b", "    return b + a")
FAILING = _diff("    return a + b", "    return a - b")


@dataclass(frozen=True)
class Run:
    """What one run of the reviewer did."""

    code: int
    out: str
    err: str
    votes: list[dict[str, Any]]

    @property
    def report(self) -> dict[str, Any]:
        lines = self.out.strip().splitlines()
        assert len(lines) == 1, self.out
        body: dict[str, Any] = json.loads(lines[0])
        return body


def _proposal(store: Store, patch: str) -> str:
    task = store.tasks.create(title="Adding numbers", actor="op")
    proposal, _ = store.proposals.create(
        task_id=task.id, agent_id="implementer-1", title="Commute", patch=patch, actor="implementer-1"
    )
    store.reviews.request_review(proposal_id=proposal["id"], actor="op")
    return str(proposal["id"])


def _stage(
    store: Store, repo: Path, proposal_id: str, command: Sequence[str], timeout: float
) -> StagedWorkspace:
    version, data = store.proposals.patch(proposal_id)
    return stage_review_workspace(
        repo, data, proposal_id=proposal_id, patch_version=version.version, patch_sha256=version.sha256,
        command=command, timeout_seconds=timeout,
    )  # fmt: skip


async def _run(
    store: Store,
    proposal_id: str,
    manifest: bytes,
    tar: bytes,
    *,
    tools: frozenset[str] = REVIEWER_TOOLS,
    token: bool = True,
) -> Run:
    issued = store.grants.mint_grant(
        proposal_id=proposal_id, role="Reviewer", agent_id="reviewer-1", tools=tools, ttl_seconds=600,
        actor="op",
    )  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="rtv-", dir="/tmp") as tmp:
        channel = Path(tmp)
        if token:
            (channel / "token").write_text(issued.token)
        (channel / REVIEW_MANIFEST).write_bytes(manifest)
        (channel / WORKSPACE_TAR).write_bytes(tar)
        async with serve_launch_socket(
            LaunchSocketApp(Services(store=store), issued.record.id), channel / "mcp.sock"
        ):
            argv = [sys.executable, "-m", "roles.test_reviewer", "--channel-dir", str(channel)]
            with anyio.fail_after(120):
                done = await anyio.run_process(argv, check=False)
    votes, _ = store.reviews.list(proposal_id=proposal_id)
    return Run(done.returncode, done.stdout.decode(), done.stderr.decode(), [v.to_dict() for v in votes])


async def _review(
    store: Store, tmp_path: Path, patch: str, command: Sequence[str] = PYTEST, seconds: float = 60
) -> Run:
    repo = make_repo(tmp_path / "repo", {"app.py": APP, "tests/test_app.py": TESTS})
    proposal_id = _proposal(store, patch)
    staged = _stage(store, repo, proposal_id, command, seconds)
    return await _run(store, proposal_id, staged.manifest_json(), staged.tar)


# -- end to end ------------------------------------------------------------------------------------


async def test_passing_tests_approve_for_the_grants_agent_on_the_current_version(
    store: Store, tmp_path: Path
) -> None:
    run = await _review(store, tmp_path, PASSING)
    assert run.code == 0, run.err
    assert run.report["vote"] == "approve" and run.report["exit_code"] == 0
    assert run.report["patch_version"] == 1 and run.report["timed_out"] is False
    [vote] = run.votes
    assert (vote["agent_id"], vote["vote"], vote["patch_version"]) == ("reviewer-1", "approve", 1)
    reason = vote["reason_md"]
    assert reason.startswith(
        "**Passed.** `python -m pytest -q -p no:cacheprovider` exited 0 on patch version 1"
    )
    assert "2 passed" in reason


async def test_a_failing_test_is_revise_quoting_the_failures_last_lines(store: Store, tmp_path: Path) -> None:
    run = await _review(store, tmp_path, FAILING)
    assert run.code == 0, run.err
    assert (run.report["vote"], run.report["exit_code"]) == ("revise", 1)
    [vote] = run.votes
    reason = vote["reason_md"]
    assert reason.startswith(
        "**Failed.** `python -m pytest -q -p no:cacheprovider` exited 1 on patch version 1"
    )
    assert "FAILED tests/test_app.py::test_add - assert 0 == 4" in reason
    assert "1 failed, 1 passed" in reason
    assert "\n```text\n" in reason and reason.rstrip().endswith("```")


HANG_WITH_A_CHILD = (
    "import subprocess, sys, threading; "
    "child = subprocess.Popen([sys.executable, '-c', 'import threading; threading.Event().wait()']); "
    "print('waiting; child', child.pid, flush=True); threading.Event().wait()"
)


def _alive(pid: int) -> bool:
    """Whether ``pid`` still runs (a zombie, killed and not yet reaped by its new parent, does not)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    state = next(line for line in status.splitlines() if line.startswith("State:"))
    return "zombie" not in state


async def test_a_command_past_its_timeout_is_revise_timed_out_and_its_children_die(
    store: Store, tmp_path: Path
) -> None:
    run = await _review(store, tmp_path, PASSING, ["python", "-c", HANG_WITH_A_CHILD], seconds=1.5)
    assert run.code == 0, run.err
    assert run.report["timed_out"] is True and run.report["exit_code"] is None
    reason = run.votes[0]["reason_md"]
    assert "timed out after 1.5 s on patch version 1" in reason and "waiting; child" in reason
    child = int(reason.split("waiting; child ")[1].split()[0])
    assert not _alive(child)  # it shared the command's process group, and died with it


async def test_a_patch_that_does_not_apply_is_revise_saying_so(store: Store, tmp_path: Path) -> None:
    run = await _review(store, tmp_path, DOES_NOT_APPLY)
    assert run.code == 0, run.err
    assert run.report == {
        "vote": "revise", "exit_code": None, "timed_out": False, "patch_version": 1, "duration_seconds": 0.0,
    }  # fmt: skip
    reason = run.votes[0]["reason_md"]
    assert reason.startswith("**The patch does not apply.** Patch version 1 does not apply")
    assert "app.py: patch does not apply" in reason


def _tar(*members: tuple[tarfile.TarInfo, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for info, data in members:
            info.size = len(data) if info.isreg() else 0
            tar.addfile(info, io.BytesIO(data) if info.isreg() else None)
    return buffer.getvalue()


async def test_a_tar_reaching_outside_is_refused_and_no_vote_is_cast(store: Store, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"app.py": APP, "tests/test_app.py": TESTS})
    proposal_id = _proposal(store, PASSING)
    staged = _stage(store, repo, proposal_id, PYTEST, 60)
    evil = _tar((tarfile.TarInfo("app.py"), b"x = 1\n"), (tarfile.TarInfo("../evil"), b"pwned\n"))
    run = await _run(store, proposal_id, staged.manifest_json(), evil)
    assert run.code == 1
    assert "the workspace is refused: '../evil' is not a plain relative path" in run.err
    assert run.votes == [] and run.out == ""
    assert not (Path(tempfile.gettempdir()) / "evil").exists()


async def test_a_newer_patch_version_means_no_vote_and_exit_4(store: Store, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"app.py": APP, "tests/test_app.py": TESTS})
    proposal_id = _proposal(store, PASSING)
    staged = _stage(store, repo, proposal_id, PYTEST, 60)
    # Version 2 arrives (and opens round 2) after the supervisor staged version 1.
    store.proposals.attach_patch(proposal_id=proposal_id, patch=FAILING, actor="implementer-1")
    run = await _run(store, proposal_id, staged.manifest_json(), staged.tar)
    assert run.code == EXIT_REFUSED
    assert "the staged tree is not the version under review" in run.err and "no vote cast" in run.err
    assert run.votes == [] and run.out == ""


async def test_a_refused_vote_is_exit_4_naming_the_tool_error(store: Store, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"app.py": APP, "tests/test_app.py": TESTS})
    proposal_id = _proposal(store, PASSING)
    staged = _stage(store, repo, proposal_id, ["python", "-c", "pass"], 60)
    run = await _run(
        store, proposal_id, staged.manifest_json(), staged.tar, tools=frozenset({"patch.inspect"})
    )
    assert run.code == EXIT_REFUSED
    assert "refused: vote.cast: [" in run.err and run.votes == []


async def test_no_token_is_exit_3_before_any_work(store: Store, tmp_path: Path) -> None:
    proposal_id = _proposal(store, PASSING)
    run = await _run(store, proposal_id, b"not read", b"", token=False)
    assert run.code == 3 and "no grant" in run.err


async def test_a_bad_manifest_is_exit_1_with_one_line(store: Store) -> None:
    proposal_id = _proposal(store, PASSING)
    manifest = json.dumps({"proposal_id": proposal_id, "patch_version": 1, "command": "pytest"}).encode()
    run = await _run(store, proposal_id, manifest, b"")
    assert run.code == 1 and run.votes == []
    assert run.err.count("\n") == 1 and "patch_sha256 is missing or not valid" in run.err


# -- the parts -------------------------------------------------------------------------------------


def _info(name: str, kind: bytes = tarfile.REGTYPE, **fields: Any) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.type = kind
    for key, value in fields.items():
        setattr(info, key, value)
    return info, b"data\n"


@pytest.mark.parametrize(
    ("member", "why"),
    [
        (_info("/etc/evil"), "not a plain relative path"),
        (_info("a/../../evil"), "not a plain relative path"),
        (_info("./a"), "not a plain relative path"),
        (_info("link", tarfile.SYMTYPE, linkname="/etc"), "not a regular file or a directory"),
        (_info("hard", tarfile.LNKTYPE, linkname="app.py"), "not a regular file or a directory"),
        (_info("dev", tarfile.CHRTYPE, devmajor=1, devminor=3), "not a regular file or a directory"),
        (_info("fifo", tarfile.FIFOTYPE), "not a regular file or a directory"),
        (_info("app.py"), "appears twice"),
        (_info("app.py/inner"), "is not a directory"),
    ],
)
def test_extraction_refuses_all_but_plain_files_and_directories(
    tmp_path: Path, member: tuple[tarfile.TarInfo, bytes], why: str
) -> None:
    archive, dest = tmp_path / "w.tar", tmp_path / "dest"
    archive.write_bytes(_tar((tarfile.TarInfo("app.py"), b"x\n"), member))
    dest.mkdir()
    with pytest.raises(WorkspaceRefused, match=why):
        extract_workspace(archive, dest)
    assert not (tmp_path / "evil").exists() and not (dest / "link").exists()


def test_extraction_writes_files_and_directories_within_the_caps(tmp_path: Path) -> None:
    directory = tarfile.TarInfo("pkg")
    directory.type = tarfile.DIRTYPE
    script = tarfile.TarInfo("pkg/run.sh")
    script.mode = 0o755
    archive = tmp_path / "w.tar"
    archive.write_bytes(
        _tar((directory, b""), (script, b"#!/bin/sh\n"), (tarfile.TarInfo("a.txt"), b"12345"))
    )
    dest = tmp_path / "dest"
    dest.mkdir()
    assert extract_workspace(archive, dest) == 2
    assert (dest / "pkg" / "run.sh").read_bytes() == b"#!/bin/sh\n" and (
        dest / "pkg/run.sh"
    ).stat().st_mode & 0o100
    for cap in ({"max_bytes": 14}, {"max_entries": 2}):
        again = tmp_path / f"again-{len(cap)}-{next(iter(cap))}"
        again.mkdir()
        with pytest.raises(WorkspaceRefused, match="more than"):
            extract_workspace(archive, again, **cap)


def test_the_command_reads_a_closed_stdin_and_runs_in_its_directory(tmp_path: Path) -> None:
    env = command_environment(tmp_path / "home", tmp_path)
    probe = "import os, sys; print(repr(sys.stdin.read()), os.getcwd(), os.environ['HOME'])"
    result = run_command(["python", "-c", probe], tmp_path, timeout=60, env=env)
    assert result.exit_code == 0
    assert result.output.split() == ["''", str(tmp_path), str(tmp_path / "home")]


def test_the_command_keeps_only_the_end_of_its_output(tmp_path: Path) -> None:
    env = command_environment(tmp_path, tmp_path)
    loud = "import sys\nfor i in range(20000): print(f'line {i}')\nsys.exit(3)"
    result = run_command([sys.executable, "-c", loud], tmp_path, timeout=60, env=env, keep_bytes=1000)
    assert (result.exit_code, result.timed_out) == (3, False)
    assert len(result.output) <= 1000 and result.output.endswith("line 19999\n")


def _manifest(**fields: Any) -> Manifest:
    base: dict[str, Any] = {
        "proposal_id": "P-1", "patch_version": 3, "patch_sha256": hashlib.sha256(b"").hexdigest(),
        "command": ["pytest", "-q"], "timeout_seconds": 30, "applied": True, "apply_error": None,
    }  # fmt: skip
    return Manifest.from_json(json.dumps({**base, **fields}).encode())


def test_the_reason_fences_the_tail_beyond_any_backtick_run() -> None:
    output = "".join(f"line {i}\n" for i in range(100)) + "a ````` run\n"
    vote, reason = reason_markdown(_manifest(), CommandResult(2, False, output, 1.0))
    assert vote == "revise" and reason.startswith(
        "**Failed.** `pytest -q` exited 2 on patch version 3 (1.0 s)."
    )
    assert "\n``````text\n" in reason and reason.rstrip().endswith("``````")
    assert "line 61\n" in reason and "line 60\n" not in reason  # the last 40 lines
    long = "x" * 5000 + "\n" + "y" * 10 + "\n"
    _, cut = reason_markdown(_manifest(), CommandResult(0, False, long, 1.0))
    assert "yyyyyyyyyy" in cut and "x" * 100 not in cut and len(cut) < 3300


def test_the_reason_for_a_signal_and_for_a_patch_that_does_not_apply() -> None:
    _, killed = reason_markdown(_manifest(), CommandResult(-9, False, "", 2.0))
    assert "was killed by signal 9" in killed and "It printed nothing." in killed
    manifest = _manifest(applied=False, apply_error="error: a.py: patch does not apply")
    vote, refused = reason_markdown(manifest, None)
    assert vote == "revise" and "so `pytest -q` was not run" in refused
    assert "a.py: patch does not apply" in refused
    # approve needs both: the patch applied and the command exited 0
    assert reason_markdown(manifest, CommandResult(0, False, "ok", 1.0))[0] == "revise"
    assert reason_markdown(_manifest(), CommandResult(0, False, "ok", 1.0))[0] == "approve"
