"""Tool names as clients spell them: the dotted contract names, and their underscore aliases.

The contract names contain dots (``memory.query``). MCP allows that, but several clients, and the
OpenAI function-name rule (``^[a-zA-Z0-9_-]+$``) that clients built on it apply, refuse such names,
so every tool also answers to its *underscore alias*: the same name with each dot replaced by an
underscore (``memory_query``). :class:`ToolNames` is the one table from every spelling to the
canonical (dotted) name; it refuses to be built when an alias would be ambiguous (the alias of one
tool equal to another tool's name or alias), so a spelling always means exactly one tool.

Which spelling ``tools/list`` shows is a :class:`ToolNaming`: ``roundtable mcp stdio`` and
``roundtable serve`` take ``--tool-names``, and ``config.toml`` has ``[mcp] tool_names``. Both
spellings are callable on every server; the policy is always checked on the canonical name.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum

from store.config import ProjectConfig

__all__ = ["ToolNames", "ToolNaming", "tool_naming", "underscore_alias"]


class ToolNaming(StrEnum):
    """The spelling ``tools/list`` uses."""

    DOTTED = "dotted"
    UNDERSCORE = "underscore"


def tool_naming(flag: str | None, config: ProjectConfig) -> ToolNaming:
    """The spelling to list: the ``--tool-names`` flag when given (it wins), else ``[mcp] tool_names``."""
    return ToolNaming(flag if flag is not None else config.mcp.tool_names)


def underscore_alias(name: str) -> str:
    """``memory.query`` -> ``memory_query``: the spelling clients with strict name rules accept."""
    return name.replace(".", "_")


class ToolNames:
    """Every spelling of every tool, mapped to its canonical name (one table, never ambiguous)."""

    def __init__(self, canonical: Iterable[str] = ()):
        self._canonical: dict[str, str] = {}
        for name in canonical:
            self.add(name)

    def add(self, name: str) -> None:
        """Register canonical ``name`` and its alias; an ambiguous spelling is a programming error."""
        alias = underscore_alias(name)
        for spelling in {name, alias}:
            taken = self._canonical.get(spelling)
            if taken is not None:
                raise ValueError(f"tool name {spelling!r} would mean both {taken!r} and {name!r}")
        self._canonical[name] = name
        self._canonical[alias] = name

    def canonical(self, spelling: str) -> str | None:
        """The canonical name ``spelling`` stands for, if it names a tool."""
        return self._canonical.get(spelling)

    @staticmethod
    def listed(name: str, naming: ToolNaming) -> str:
        """How canonical ``name`` is listed under ``naming``."""
        return underscore_alias(name) if naming is ToolNaming.UNDERSCORE else name
