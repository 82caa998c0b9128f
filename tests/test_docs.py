"""Docs that are tested: every MCP tool and every CLI command appears in docs/, and every
package's ``__all__`` names things that exist."""

from __future__ import annotations

import argparse
import importlib
from pathlib import Path

import pytest

from capabilities.mcp.tools import build_registry
from supervisor.cli._main import build_parser

DOCS = Path(__file__).resolve().parent.parent / "docs"


def _all_docs() -> str:
    return "\n".join(path.read_text(encoding="utf-8") for path in sorted(DOCS.glob("*.md")))


def _commands(parser: argparse.ArgumentParser, prefix: tuple[str, ...]) -> list[str]:
    found: list[str] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                nested = _commands(sub, (*prefix, name))
                found.extend(nested or [" ".join((*prefix, name))])
    return found


def test_every_tool_is_documented() -> None:
    text = _all_docs()
    missing = [name for name in build_registry().names() if f"`{name}" not in text]
    assert not missing, f"tools missing from docs/: {missing}"


def test_every_cli_command_is_in_the_cli_reference() -> None:
    text = (DOCS / "cli.md").read_text(encoding="utf-8")
    commands = _commands(build_parser(), ("roundtable",))
    assert len(commands) > 20
    missing = [command for command in commands if f"`{command}" not in text]
    assert not missing, f"commands missing from docs/cli.md: {missing}"


@pytest.mark.parametrize("package", ["store", "capabilities", "supervisor", "roles"])
def test_public_names_exist(package: str) -> None:
    module = importlib.import_module(package)
    for name in getattr(module, "__all__", []):
        assert hasattr(module, name), f"{package}.__all__ names {name}, which does not exist"
