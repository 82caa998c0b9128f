"""The CLI's command modules. Each exposes ``register(subparsers, common)``.

:data:`COMMANDS` names the top-level commands each module registers, so a command line that
names one is parsed by a parser holding that module's commands alone, without importing or
building the others (:func:`command_modules`; a test holds each module to its entry).
"""

from __future__ import annotations

import importlib
from types import MappingProxyType, ModuleType
from typing import TYPE_CHECKING, Final

from store import lazy_exports

if TYPE_CHECKING:
    from supervisor.cli.commands._oracle import cited_warnings

__all__ = ["COMMANDS", "cited_warnings", "command_modules"]

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


def command_modules(command: str | None = None) -> list[ModuleType]:
    """The command modules, imported: the one that registers top-level ``command``, or every one
    (``command`` None or no module's)."""
    names = [module for module, commands in COMMANDS.items() if command in commands] or list(COMMANDS)
    return [importlib.import_module(f"{__name__}.{name}") for name in names]


if not TYPE_CHECKING:  # for mypy, the import above: ``cited_warnings`` imported with its module on first use
    __getattr__ = lazy_exports(__name__, {f"{__name__}._oracle": ("cited_warnings",)})
