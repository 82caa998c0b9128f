"""The CLI reads well in a terminal: real subprocesses on a real project.

Without ``--json`` every command prints a short summary or a table, never JSON; colour only on a
terminal and never with ``NO_COLOR``; bare ``roundtable`` prints its help; IDs may be abbreviated
to any unique prefix; a re-vote and a re-attached identical diff say what happened; ``init``
suggests ignoring ``.roundtable/``; ``serve`` says where it listens and how to get a token.
"""

from __future__ import annotations

import json
import os
import pty
import re
import select
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.store.work_helpers import DIFF, seed_files

_ID = re.compile(r"\b[A-Z]-\d{8}T\d{12}Z-[0-9a-f]{12}\b")


class Cli:
    """Runs ``roundtable ...`` in a project directory."""

    def __init__(self, argv: list[str], root: Path):
        self.argv = argv
        self.root = root

    def run(self, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*self.argv, *args],
            cwd=self.root,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            env=env,
        )

    def json(self, *args: str) -> dict[str, Any]:
        result = self.run(*args, "--json")
        assert result.returncode == 0, (result.stdout, result.stderr)
        body: dict[str, Any] = json.loads(result.stdout)
        return body

    def text(self, *args: str) -> str:
        """The readable output of a successful command: never JSON, never an escape sequence."""
        result = self.run(*args)
        assert result.returncode == 0, (result.stdout, result.stderr)
        out = result.stdout
        assert not out.lstrip().startswith(("{", "[")), out
        assert "\x1b" not in out, out
        return out

    def error(self, *args: str, code: str) -> dict[str, Any]:
        result = self.run(*args, "--json")
        assert result.returncode == 1, (result.stdout, result.stderr)
        body: dict[str, Any] = json.loads(result.stdout)
        assert body["error"]["code"] == code, body
        return body


@pytest.fixture
def cli(tmp_path: Path, roundtable_argv: list[str]) -> Cli:
    root = tmp_path / "proj"
    root.mkdir()
    seed_files(root)
    (root / "v1.diff").write_text(DIFF)
    runner = Cli(roundtable_argv, root)
    runner.json("init")
    return runner


def _proposal(cli: Cli) -> tuple[str, str]:
    task = cli.json("task", "create", "--title", "Shout")["task"]["id"]
    created = ("proposal", "create", "--task", task, "--agent", "implementer-1", "--title", "Loud")
    return task, cli.json(*created, "--patch", "v1.diff")["proposal"]["id"]


def test_every_command_prints_a_short_summary_not_json(cli: Cli) -> None:
    task = cli.json("task", "create", "--title", "Shout")["task"]["id"]
    assert cli.text("task", "list").splitlines()[0].split() == ["ID", "STATUS", "PRIORITY", "TITLE"]
    out = cli.text("proposal", "create", "--task", task, "--agent", "implementer-1", "--title", "Loud",
                   "--patch", "v1.diff")  # fmt: skip
    pid = _ID.findall(out)[0]
    # The patch once: its version, size, hash prefix and files on one line; no patch object.
    assert len(out.splitlines()) <= 5 and out.count("sha256") == 1 and "hello.txt" in out, out
    assert f"roundtable review request {pid}" in out
    assert "may vote: reviewer-1, reviewer-2" in cli.text("review", "request", pid)
    first = cli.text("vote", "cast", pid, "--agent", "reviewer-1", "--vote", "approve", "--reason", "ok")
    assert "replaces" not in first and "[counts]" in first
    again = cli.text("vote", "cast", pid, "--agent", "reviewer-1", "--vote", "revise", "--reason", "no")
    replaced = _ID.findall(first)[0]
    assert f"replaces reviewer-1's earlier vote {replaced}" in again, again
    listed = cli.text("vote", "list", pid)
    assert re.search(rf"{replaced}\s+reviewer-1\s+approve\s+v1\s+no\s+ok", listed), listed
    outputs = {
        "task get": cli.text("task", "get", task),
        "proposal get": cli.text("proposal", "get", pid),
        "proposal list": cli.text("proposal", "list"),
        "patch validate": cli.text("patch", "validate", pid),
        "decision record": cli.text(
            "decision", "record", "--proposal", pid, "--outcome", "noted", "--rationale", "fine"
        ),
        "token create": cli.text("token", "create", "--name", "alice"),
        "token list": cli.text("token", "list"),
        "capability grant": cli.text("capability", "grant", "--proposal", pid, "--role", "memory_oracle"),
        "capability list": cli.text("capability", "list"),
        "memory record": cli.text(
            "memory",
            "record",
            "--scope",
            "project",
            "--kind",
            "fact",
            "--title",
            "Loud is fine",
            "--body",
            "b",
        ),
        "memory query": cli.text("memory", "query", "loud"),
        "timeline": cli.text("timeline", pid),
        "gc": cli.text("gc"),
        "patch reject": cli.text("patch", "reject", pid, "--reason", "no"),
    }
    for name, text in outputs.items():
        assert 1 <= len(text.splitlines()) <= 30, (name, text)
        assert '": ' not in text, (name, text)  # no JSON object anywhere in it
    assert "rejected" in outputs["patch reject"] and "valid" in outputs["patch validate"]
    assert outputs["token create"].splitlines()[1].strip() and "store it now" in outputs["token create"]
    # The JSON is still all there with --json.
    assert set(cli.json("proposal", "get", pid)["proposal"]) >= {"versions", "consensus", "patch"}


def _on_a_terminal(argv: list[str], cwd: Path, env: dict[str, str]) -> str:
    """What ``argv`` prints when its stdout is a terminal (a pseudo-terminal)."""
    leader, follower = pty.openpty()
    process = subprocess.Popen(argv, cwd=cwd, stdout=follower, stderr=subprocess.DEVNULL, env=env)
    os.close(follower)
    chunks: list[bytes] = []
    while True:
        ready, _, _ = select.select([leader], [], [], 60)
        if not ready:
            break
        try:
            data = os.read(leader, 4096)
        except OSError:  # the child closed its side
            break
        if not data:
            break
        chunks.append(data)
    process.wait(timeout=60)
    os.close(leader)
    return b"".join(chunks).decode()


def test_colour_only_on_a_terminal_and_never_with_no_color(cli: Cli) -> None:
    _, pid = _proposal(cli)
    env = {key: value for key, value in os.environ.items() if key != "NO_COLOR"}
    argv = [*cli.argv, "proposal", "list"]
    assert "\x1b[" in _on_a_terminal(argv, cli.root, env)
    plain = _on_a_terminal(argv, cli.root, {**env, "NO_COLOR": "1"})
    assert pid in plain and "\x1b" not in plain
    assert "\x1b" not in cli.run("proposal", "list", env=env).stdout  # a pipe: plain text


def test_bare_roundtable_prints_its_help_as_a_usage_error(cli: Cli) -> None:
    bare = cli.run()
    assert bare.returncode == 2 and bare.stdout == ""
    assert (
        bare.stderr.startswith("usage: roundtable")
        and "proposal" in bare.stderr
        and "timeline" in bare.stderr
    )


def test_ids_may_be_abbreviated_to_a_unique_prefix(cli: Cli) -> None:
    task, pid = _proposal(cli)
    _, other = _proposal(cli)
    short = pid[:-4]
    assert cli.json("proposal", "get", short)["proposal"]["id"] == pid
    assert cli.json("task", "get", task[:-4])["task"]["id"] == task
    assert cli.json("review", "request", short)["proposal"]["id"] == pid
    voted = cli.json("vote", "cast", short, "--agent", "reviewer-1", "--vote", "approve", "--reason", "ok")
    assert voted["vote"]["proposal_id"] == pid
    assert cli.json("timeline", short)["proposal"]["id"] == pid
    assert [g["proposal_id"] for g in cli.json("capability", "list", "--proposal", short)["grants"]] == []
    # Ambiguous: invalid_argument naming the candidates; on a terminal, one per line.
    common = next(pid[:i] for i in range(len(pid)) if pid[: i + 1] != other[: i + 1])
    body = cli.error("proposal", "get", common, code="invalid_argument")
    assert "ambiguous" in body["error"]["message"]
    assert body["error"]["details"]["candidates"] == sorted([pid, other])
    text = cli.run("proposal", "get", common)
    assert text.returncode == 1 and pid in text.stderr and other in text.stderr
    assert "too short" in cli.error("proposal", "get", "P-2", code="invalid_argument")["error"]["message"]
    # Nothing starts with it: the tool's own not_found, as before. "_" is no wildcard (it would
    # match both proposals); "%" is not even a character IDs may hold.
    for missing in ("P-1999", "P-2026_"):
        cli.error("proposal", "get", missing, code="not_found")
    assert (
        "may hold only"
        in cli.error("proposal", "get", "P-2026%", code="invalid_argument")["error"]["message"]
    )


def test_reattaching_the_same_diff_changes_nothing_and_says_so(cli: Cli) -> None:
    _, pid = _proposal(cli)
    cli.json("review", "request", pid)
    for agent in ("reviewer-1", "reviewer-2"):
        cli.json("vote", "cast", pid, "--agent", agent, "--vote", "approve", "--reason", "ok")
    events = len(cli.json("timeline", pid)["events"])
    said = cli.text("proposal", "attach-patch", pid, "--patch", "v1.diff")
    assert "byte-identical to patch v1" in said and "nothing changed" in said and "accepted" in said
    body = cli.json("proposal", "attach-patch", pid, "--patch", "v1.diff")
    assert body["patch"]["unchanged"] is True and body["patch"]["version"] == 1
    assert body["invalidated_vote_ids"] == []
    after = cli.json("proposal", "get", pid)["proposal"]
    assert after["status"] == "accepted" and after["current_version"] == 1
    assert len(cli.json("timeline", pid)["events"]) == events


def test_init_suggests_ignoring_the_state_directory_in_a_git_work_tree(cli: Cli, tmp_path: Path) -> None:
    plain = cli.run("init")  # not a git work tree: nothing to suggest
    assert plain.returncode == 0 and "gitignore" not in plain.stderr
    subprocess.run(["git", "init", "-q"], cwd=cli.root, check=True, timeout=60)
    hinted = cli.run("init", "--json")
    assert json.loads(hinted.stdout)["created"] is False  # stdout: the answer alone
    assert "hint: .roundtable/ is not ignored by git" in hinted.stderr
    assert not (cli.root / ".gitignore").exists()  # never edited unasked
    added = cli.run("init", "--gitignore")
    assert added.returncode == 0 and (cli.root / ".gitignore").read_text() == ".roundtable/\n"
    ignored = subprocess.run(["git", "status", "--porcelain"], cwd=cli.root, capture_output=True, text=True)
    assert ".roundtable" not in ignored.stdout
    assert "hint" not in cli.run("init").stderr


def test_the_readme_way_to_capture_an_id_works(cli: Cli) -> None:
    readme = (Path(__file__).resolve().parents[3] / "README.md").read_text(encoding="utf-8")
    line = next(line for line in readme.splitlines() if "jq -r .task.id" in line)
    assert line.strip().startswith("T=$($rt task create"), line
    script = f"rt='{' '.join(cli.argv)}'; {line.split('#')[0].strip()}; echo \"$T\""
    ran = subprocess.run(["bash", "-c", script], cwd=cli.root, capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr
    assert _ID.fullmatch(ran.stdout.strip()) and ran.stdout.startswith("T-")


def test_serve_says_where_it_listens_and_how_to_get_a_token(cli: Cli) -> None:
    process = subprocess.Popen(
        [*cli.argv, "serve", "--port", "0"],
        cwd=cli.root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        lines: list[str] = []
        while not any("Ctrl-C" in line for line in lines):
            line = process.stderr.readline()
            assert line, f"serve ended early: {''.join(lines)}"
            lines.append(line)
        banner = "".join(lines)
        base = re.search(r"serving (http://127\.0\.0\.1:\d+)", banner)
        assert base, banner
        for url in (f"{base[1]}/mcp", f"{base[1]}/api/v1", f"{base[1]}/"):
            assert url in banner, banner
        assert "roundtable token create --name NAME" in banner
    finally:
        process.send_signal(signal.SIGINT)
        out, _ = process.communicate(timeout=60)
    assert process.returncode == 0 and out.startswith("stopped serving http://127.0.0.1:")


def test_progress_times_count_from_the_process_start() -> None:
    """A progress line's time includes what the process spent before the printer existed."""
    script = (
        "import time; time.sleep(0.3)\n"
        "from supervisor.cli._launch_text import process_started\n"
        "print(time.monotonic() - process_started())\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert 0.3 <= float(done.stdout) < 30
