"""The CLI's command modules. Each exposes ``register(subparsers, common)``.

:data:`COMMANDS` names the top-level commands each module registers, so a command line that
names one is parsed by a parser holding that module's commands alone, without importing or
building the others (:func:`command_modules`; a test holds each module to its entry).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from types import MappingProxyType, ModuleType
from typing import TYPE_CHECKING, Any, Final, NamedTuple

from store import lazy_exports

if TYPE_CHECKING:
    import argparse

    from supervisor.cli.commands._oracle import cited_warnings

__all__ = ["COMMANDS", "SUMMARIES", "LazyRenderer", "add_command", "cited_warnings", "command_modules"]

COMMANDS: Final = MappingProxyType(
    {
        "_project": ("init", "demo"),
        "_memory": ("memory",),
        "_mcp": ("mcp",),
        "_image": ("image", "doctor"),
        "_access": ("token", "capability", "serve"),
        "_work": ("task", "proposal", "review", "vote", "decision", "patch", "timeline", "gc"),
        "_oracle": ("oracle",),
    }
)
"""Each command module, in the order the help lists them, and the top-level commands it registers."""

SUMMARIES: Final = MappingProxyType(
    {
        "init": "create .roundtable/ (idempotent)",
        "demo": "the whole story in a scratch project: memory, proposal, oracle, timeline",
        "memory": "record, query and curate project memory",
        "mcp": "serve the MCP tools",
        "image": "the role container image",
        "doctor": "check Docker, the role image, the runtime dir and the database",
        "token": "operator and agent tokens for HTTP",
        "capability": "role capabilities bound to a proposal",
        "serve": "MCP over streamable HTTP at /mcp (bearer tokens)",
        "task": "create and read tasks",
        "proposal": "propose patches and attach new versions",
        "review": "review rounds",
        "vote": "cast and list votes",
        "decision": "record immutable decisions",
        "patch": "validate, apply or reject a proposal's patch",
        "timeline": "a proposal's timeline, oldest first",
        "gc": "after a crash: remove orphaned patch files, roll back interrupted applies",
        "oracle": "the MemoryOracle (advisory reviewer)",
    }
)
"""Each top-level command's one line in the help, in the order the help lists them: the top-level
help is built from it alone, importing no command module (:func:`supervisor.cli._main.summary_parser`)."""


class LazyRenderer(NamedTuple):
    """A command's renderer (``set_defaults(render=...)``): the function ``name`` of the CLI module
    ``module`` (``_render``, ``_render_access``), imported when an answer is first rendered rather
    than when the command's parser is built (the tables' module imports ``dataclasses``, which costs
    more than the rest of a group's ``--help``)."""

    module: str
    name: str

    def resolve(self) -> Callable[[dict[str, Any]], str]:
        """The renderer itself, its module imported."""
        function: Callable[[dict[str, Any]], str] = getattr(
            importlib.import_module(f"supervisor.cli.{self.module}"), self.name
        )
        return function

    def __call__(self, body: dict[str, Any]) -> str:
        """Render ``body`` (a command's answer) as text."""
        return self.resolve()(body)


def add_command(commands: Any, name: str, common: argparse.ArgumentParser) -> Any:
    """Add top-level command ``name`` to ``commands`` (a subparsers action), its help from
    :data:`SUMMARIES`, with the common options; return its parser."""
    return commands.add_parser(name, parents=[common], help=SUMMARIES[name])


def command_modules(command: str | None = None) -> list[ModuleType]:
    """The command modules, imported: the one that registers top-level ``command``, or every one
    (``command`` None or no module's)."""
    names = [module for module, commands in COMMANDS.items() if command in commands] or list(COMMANDS)
    return [importlib.import_module(f"{__name__}.{name}") for name in names]


if not TYPE_CHECKING:  # for mypy, the import above: ``cited_warnings`` imported with its module on first use
    __getattr__ = lazy_exports(__name__, {f"{__name__}._oracle": ("cited_warnings",)})
