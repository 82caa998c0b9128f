"""The MCP layer as a registry of thin tools.

A :class:`ToolSpec` names a tool, advertises its input schema (generated from a pydantic model
that also validates the arguments) and its MCP annotations, and points at an async handler over
the :class:`~capabilities.services.Services`. Who may call a tool is decided elsewhere
(:mod:`capabilities.policy`); tool bodies stay small.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, ValidationError

from store import check_depth
from store.errors import InvalidArgument

if TYPE_CHECKING:
    from capabilities.principals import Principal
    from capabilities.services import Services

__all__ = ["ToolArgs", "ToolCall", "ToolRegistry", "ToolSpec", "validation_message"]


class ToolArgs(BaseModel):
    """Base of every tool's argument model: unknown arguments are refused, types are strict."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


@dataclass(frozen=True)
class ToolCall:
    """What a handler receives: the services, the caller, and the validated arguments."""

    services: Services
    principal: Principal
    args: Any


Handler = Callable[[ToolCall], Awaitable[dict[str, Any]]]


@dataclass(frozen=True)
class ToolSpec:
    """One MCP tool: its name, description, argument model, annotations and handler."""

    name: str
    description: str
    args_model: type[ToolArgs]
    handler: Handler
    read_only: bool = False
    destructive: bool = False
    idempotent: bool = False

    def input_schema(self) -> dict[str, Any]:
        """The JSON schema advertised in ``tools/list``: every accepted argument (a fresh copy)."""
        return copy.deepcopy(_input_schema(self.args_model))

    def parse(self, arguments: dict[str, Any] | None) -> ToolArgs:
        """Validate raw arguments, turning pydantic's errors into ``invalid_argument``.

        Arguments nested past :data:`store.MAX_JSON_DEPTH` are refused first, as an HTTP body is
        (the SDK's JSON parser lets about 200 levels through to recursive code).
        """
        check_depth(f"the argument object of {self.name}", arguments)
        try:
            return self.args_model.model_validate(arguments or {})
        except ValidationError as exc:
            raise InvalidArgument(f"{self.name}: {validation_message(exc)}") from None


@functools.cache
def _input_schema(args_model: type[ToolArgs]) -> dict[str, Any]:
    # An argument model never changes, and generating its schema costs far more than copying it:
    # ~0.3 ms a tool on every tools/list (and the SDK's client lists the tools once per session).
    schema = args_model.model_json_schema()
    schema.pop("title", None)
    schema["additionalProperties"] = False
    return schema


def validation_message(exc: ValidationError) -> str:
    """A short, value-free description of what was wrong with the arguments."""
    problems = []
    for error in exc.errors(include_url=False, include_input=False):
        where = ".".join(str(part) for part in error["loc"]) or "arguments"
        problems.append(f"{where}: {error['msg']}")
    return "; ".join(problems[:10])


class ToolRegistry:
    """Every tool Roundtable serves, by name."""

    def __init__(self, specs: Iterable[ToolSpec] = ()):
        self._specs: dict[str, ToolSpec] = {}
        for spec in specs:
            self.add(spec)

    def add(self, spec: ToolSpec) -> None:
        """Register a tool; a duplicate name is a programming error."""
        if spec.name in self._specs:
            raise ValueError(f"tool {spec.name} is registered twice")
        self._specs[spec.name] = spec

    def get(self, name: str) -> ToolSpec | None:
        """The tool called ``name``, if registered."""
        return self._specs.get(name)

    def names(self) -> list[str]:
        """Every registered name, sorted."""
        return sorted(self._specs)

    def specs(self) -> list[ToolSpec]:
        """Every registered tool, sorted by name."""
        return [self._specs[name] for name in self.names()]
