"""What the ``roundtable`` command imports to start: the line that keeps it fast.

Each case runs the command in a fresh interpreter (``python -m supervisor ARGS``, through
:mod:`runpy`, exactly as the console script does) and then reads :data:`sys.modules`.

- ``--help``, a group's ``--help`` and a usage error build the parser and nothing else: of ours,
  only :mod:`supervisor.cli` and the store's errors and text rule; none of the SDKs, pydantic,
  structlog, anyio, asyncio or SQLite.
- Light commands (``init``, ``memory query``, ``task list``, ``token list``, ...) open the store
  and call tools through the dispatch, and import neither the servers (the MCP SDK, starlette,
  uvicorn, the HTTP API, the console), nor httpx, nor Docker, nor the supervisor's launch machinery,
  nor numpy (a ranked query's).

A module written here means it and its submodules. If one of these fails, something imports a
heavy module at the top of a module the command needs: import it in the function that uses it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]

# Runs the CLI as `python -m supervisor` does, then writes what was imported to the file argv[1].
_PROBE = """
import json, runpy, sys
out, preload, *argv = sys.argv[1:]
for name in filter(None, preload.split(",")):
    __import__(name)
sys.argv = ["roundtable", *argv]
try:
    runpy.run_module("supervisor", run_name="__main__", alter_sys=True)
    code = 0
except SystemExit as exc:
    code = exc.code
with open(out, "w", encoding="utf-8") as handle:
    json.dump({"code": code, "modules": sorted(sys.modules)}, handle)
"""

SERVERS_AND_DOCKER = (
    "docker",
    "mcp",
    "uvicorn",
    "starlette",
    "httpx",
    "httpx2",
    "capabilities.console",
    "capabilities.serving",
    "capabilities.http_api",
    "capabilities.mcp._server",
    "capabilities.auth",
    "supervisor._supervisor",
    "supervisor.docker",
    "supervisor.launch",
    "supervisor.image",
    "supervisor.review",
    "supervisor.models",
    "numpy",
)
"""Never imported by a light command: the servers, the HTTP client, Docker, the launch machinery,
numpy (the ranked memory search's, imported by its first ranked query)."""

PARSER_ONLY = (
    *SERVERS_AND_DOCKER,
    "pydantic",
    "structlog",
    "rich",
    "anyio",
    "asyncio",
    "sqlite3",
    "tenacity",
    "capabilities",
    "roles",
)
"""Never imported to print help or a usage error: everything a command imports to run."""

OURS_FOR_THE_PARSER = (
    "supervisor",
    "supervisor.cli",
    "store",
    "store.errors",
    "store._text",
    "store._lazy",
    "store._plain_structlog",
)
"""All of our modules that ``--help`` may import: the CLI itself, the store's errors and what its
package root is made of (its lazy exports, the finder that keeps rich out of structlog)."""


def _matches(module: str, names: tuple[str, ...]) -> bool:
    return any(module == name or module.startswith(name + ".") for name in names)


def _imported(argv: list[str], tmp_path: Path, *, preload: str = "") -> tuple[object, list[str]]:
    """Run ``roundtable ARGV`` in a fresh interpreter; its exit code and every module it imported."""
    out = tmp_path / f"modules-{len(list(tmp_path.glob('modules-*')))}.json"
    path = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PYTHONPATH": path}
    result = subprocess.run(
        [sys.executable, "-c", _PROBE, str(out), preload, *argv],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.exists(), f"the probe did not finish:\n{result.stdout}\n{result.stderr[-3000:]}"
    report = json.loads(out.read_text(encoding="utf-8"))
    return report["code"], report["modules"]


def _parser_offenders(modules: list[str]) -> list[str]:
    ours = ("store", "capabilities", "supervisor", "roles")
    return sorted(
        module
        for module in modules
        if _matches(module, PARSER_ONLY)
        or (
            module.split(".")[0] in ours
            and module not in OURS_FOR_THE_PARSER
            and not module.startswith("supervisor.cli.")
        )
    )


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An initialised project with one memory entry and one task."""
    root = tmp_path_factory.mktemp("startup") / "proj"
    root.mkdir()
    for args in (
        ["init"],
        ["memory", "record", "--scope", "project", "--kind", "fact", "--title", "T", "--body", "B"],
        ["task", "create", "--title", "A task"],
    ):
        subprocess.run(
            [sys.executable, "-m", "supervisor", *args, "--root", str(root)],
            capture_output=True,
            check=True,
            timeout=120,
        )
    return root


@pytest.mark.parametrize(
    ("argv", "code"),
    [(["--help"], 0), (["task", "--help"], 0), (["memory", "query", "--help"], 0), (["no-such-command"], 2)],
    ids=["help", "group-help", "command-help", "usage-error"],
)
def test_help_and_usage_errors_import_only_the_parser(argv: list[str], code: int, tmp_path: Path) -> None:
    status, modules = _imported(argv, tmp_path)
    assert status == code
    offenders = _parser_offenders(modules)
    assert not offenders, f"`roundtable {' '.join(argv)}` imports what only commands need: {offenders}"


@pytest.mark.parametrize("argv", [["--help"], ["-h", "--json"], []], ids=["help", "h-json", "bare"])
def test_the_top_level_help_imports_no_command_module(argv: list[str], tmp_path: Path) -> None:
    """Its lines come from ``supervisor.cli.commands.SUMMARIES``: no command module is imported."""
    status, modules = _imported(argv, tmp_path)
    assert status == (2 if not argv else 0)
    built = sorted(m for m in modules if m.startswith("supervisor.cli.commands."))
    assert not built, f"`roundtable {' '.join(argv)}` imports command modules: {built}"


@pytest.mark.parametrize(
    ("argv", "needs"),
    [
        (["init"], "store.db"),
        (["memory", "query", "x"], "capabilities.mcp.tools"),
        (["task", "list"], "capabilities.mcp.tools"),
        (["proposal", "list"], "capabilities.mcp.tools"),
        (["oracle", "stats"], "capabilities.mcp.tools"),
        (["token", "list"], "store.access"),
        (["capability", "list"], "store.access"),
    ],
    ids=["init", "memory-query", "task-list", "proposal-list", "oracle-stats", "token-list", "cap-list"],
)
def test_light_commands_import_no_server_and_no_docker(
    argv: list[str], needs: str, project: Path, tmp_path: Path
) -> None:
    status, modules = _imported([*argv, "--root", str(project)], tmp_path)
    assert status == 0
    assert needs in modules  # the command did run
    offenders = sorted(module for module in modules if _matches(module, SERVERS_AND_DOCKER))
    assert not offenders, f"`roundtable {' '.join(argv)}` imports the servers or Docker: {offenders}"


def test_the_checks_would_notice(tmp_path: Path) -> None:
    """The probe sees an eager import: ``--help`` after importing docker and structlog fails the rules."""
    status, modules = _imported(["--help"], tmp_path, preload="docker,structlog,capabilities.policy")
    assert status == 0
    offenders = _parser_offenders(modules)
    assert {"docker", "structlog", "capabilities.policy"} <= set(offenders)
    assert any(_matches(module, SERVERS_AND_DOCKER) for module in modules)
    assert not _matches("dockerfile_parse", ("docker",)) and _matches("docker.types", ("docker",))
