"""The CLI's command modules. Each exposes ``register(subparsers, common)``."""

from __future__ import annotations

from types import ModuleType

from supervisor.cli.commands import _access, _image, _mcp, _memory, _oracle, _project, _work

__all__ = ["COMMAND_MODULES"]

COMMAND_MODULES: list[ModuleType] = [
    _project,
    _memory,
    _mcp,
    _image,
    _access,
    _work,
    _oracle,
]
