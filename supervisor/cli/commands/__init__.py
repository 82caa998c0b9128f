"""The CLI's command modules. Each exposes ``register(subparsers, common)``."""

from __future__ import annotations

from types import ModuleType

from supervisor.cli.commands import _access, _image, _mcp, _memory, _oracle, _project, _work
from supervisor.cli.commands._oracle import cited_warnings

__all__ = ["COMMAND_MODULES", "cited_warnings"]

COMMAND_MODULES: list[ModuleType] = [
    _project,
    _memory,
    _mcp,
    _image,
    _access,
    _work,
    _oracle,
]
