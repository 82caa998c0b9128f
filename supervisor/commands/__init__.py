"""The CLI's command modules. Each exposes ``register(subparsers, common)``."""

from __future__ import annotations

from types import ModuleType

from supervisor.commands import access_cmd, image_cmd, mcp_cmd, memory_cmd, oracle_cmd, project_cmd, work_cmd

__all__ = ["COMMAND_MODULES"]

COMMAND_MODULES: list[ModuleType] = [
    project_cmd,
    memory_cmd,
    mcp_cmd,
    image_cmd,
    access_cmd,
    work_cmd,
    oracle_cmd,
]
