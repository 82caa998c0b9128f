"""The MCP layer as a registry of thin tools.

A :class:`ToolSpec` names a tool, gives it a title, advertises its input schema (generated from a
pydantic model that also validates the arguments), its output schema (generated from the pydantic
model its handler builds the answer from) and its MCP annotations, and points at an async handler
over the :class:`~capabilities.services.Services`. Who may call a tool is decided elsewhere
(:mod:`capabilities.policy`); tool bodies stay small.
"""

from __future__ import annotations

import copy
import importlib
import threading
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, ValidationError

from capabilities.mcp._names import ToolNames
from store import check_depth
from store.errors import InternalError, InvalidArgument

if TYPE_CHECKING:
    from capabilities.principals import Principal
    from capabilities.services import Services

__all__ = [
    "BuiltAnswer",
    "ToolArgs",
    "ToolCall",
    "ToolRegistry",
    "ToolResult",
    "ToolSpec",
    "validation_message",
]


class ToolArgs(BaseModel):
    """Base of every tool's argument model: unknown arguments are refused, types are strict."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class ToolResult(BaseModel):
    """Base of every tool's answer model: the answer is built from it, and its schema is the tool's
    ``outputSchema``. Fields the store may add later pass through (``extra="allow"``)."""

    model_config = ConfigDict(extra="allow", frozen=True)


@dataclass(frozen=True)
class ToolCall:
    """What a handler receives: the services, the caller, and the validated arguments."""

    services: Services
    principal: Principal
    args: Any


@dataclass(frozen=True)
class BuiltAnswer:
    """An answer a handler built as its result model's JSON already: ``body`` is what
    ``model.model_validate(body).model_dump(mode="json", exclude_unset=True)`` would give.

    For answers made of the store's own records in their JSON projection (``memory.query``'s
    entries, :meth:`store.memory.MemoryEntry.core`), where validating each one into the model and
    dumping it again only copied what the database had: ~0.05 ms of a 20-entry query. The model
    still names the schema the answer is advertised with; a test holds each such answer to
    ``model``'s round trip (``tests/capabilities/mcp/test_built_answers.py``).
    """

    model: type[ToolResult]
    body: dict[str, Any]


Handler = Callable[[ToolCall], Awaitable[ToolResult | BuiltAnswer | dict[str, Any]]]


@dataclass(frozen=True)
class ToolSpec:
    """One MCP tool: its name, description, argument model, annotations, handler, title and answer model.

    Every tool Roundtable registers has a ``title`` and a ``result_model`` (a test checks it); a
    spec without a ``result_model`` (a benchmark's no-op) advertises no ``outputSchema`` and may
    answer a plain dict.
    """

    name: str
    description: str
    args_model: type[ToolArgs]
    handler: Handler
    read_only: bool = False
    destructive: bool = False
    idempotent: bool = False
    title: str | None = None
    result_model: type[ToolResult] | None = None

    def input_schema(self, *, fresh: bool = True) -> dict[str, Any]:
        """The JSON schema advertised in ``tools/list``: every accepted argument (a fresh copy;
        ``fresh=False``: the cached schema itself, for a caller that only serializes it)."""
        schema = _input_schema(self.args_model)
        return copy.deepcopy(schema) if fresh else schema

    def output_schema(self, *, fresh: bool = True) -> dict[str, Any] | None:
        """The JSON schema of the answer, advertised as ``outputSchema`` (a fresh copy;
        ``fresh=False`` as for :meth:`input_schema`)."""
        if self.result_model is None:
            return None
        schema = _output_schema(self.result_model)
        return copy.deepcopy(schema) if fresh else schema

    def answer(self, result: ToolResult | BuiltAnswer | dict[str, Any]) -> dict[str, Any]:
        """The JSON object a handler's ``result`` is sent as: its model's dump, keys it left unset
        out (a :class:`BuiltAnswer` of the spec's own model is that dump already)."""
        if isinstance(result, BuiltAnswer):
            if self.result_model is None or result.model is not self.result_model:
                raise InternalError(f"{self.name} answered a {result.model.__name__}, not its result model")
            return result.body
        if self.result_model is None:
            if not isinstance(result, dict):
                raise InternalError(f"{self.name} answered a {type(result).__name__}, not an object")
            return result
        if not isinstance(result, self.result_model):
            raise InternalError(f"{self.name} answered a {type(result).__name__}, not its result model")
        return result.model_dump(mode="json", exclude_unset=True)

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


_INPUT_SCHEMAS: dict[type[ToolArgs], dict[str, Any]] = {}
_OUTPUT_SCHEMAS: dict[type[ToolResult], dict[str, Any]] = {}
"""The schemas built (or adopted, :meth:`ToolRegistry.adopt_schemas`) per model: a model never
changes, and generating its schema costs far more than copying it (~0.3 ms a tool on every
``tools/list``; the SDK's client lists the tools once per session)."""


def _input_schema(args_model: type[ToolArgs]) -> dict[str, Any]:
    schema = _INPUT_SCHEMAS.get(args_model)
    if schema is None:
        schema = _INPUT_SCHEMAS[args_model] = _build_input_schema(args_model)
    return schema


def _output_schema(result_model: type[ToolResult]) -> dict[str, Any]:
    schema = _OUTPUT_SCHEMAS.get(result_model)
    if schema is None:
        schema = _OUTPUT_SCHEMAS[result_model] = _build_output_schema(result_model)
    return schema


def _build_input_schema(args_model: type[ToolArgs]) -> dict[str, Any]:
    schema = args_model.model_json_schema()
    schema.pop("title", None)
    schema["additionalProperties"] = False
    return schema


def _build_output_schema(result_model: type[ToolResult]) -> dict[str, Any]:
    # The SDK's client validates every answer against this schema with jsonschema, in Python: a
    # ``$ref`` costs a lookup and a new validator for each item it covers, and an ``anyOf`` a
    # validator per branch, so the schema is written out without either where it means the same:
    # nested models inline, ``X | None`` as a list of types. That halves the client's check of a
    # 20-entry ``memory.query`` answer, and states exactly what pydantic's schema states.
    schema = result_model.model_json_schema(mode="serialization")
    schema.pop("title", None)
    defs = schema.pop("$defs", {})
    flat = _flatten(schema, defs, ())
    assert isinstance(flat, dict)
    return flat


def _flatten(node: Any, defs: dict[str, Any], seen: tuple[str, ...]) -> Any:
    """``node`` with each ``$ref`` into ``defs`` inlined and each ``anyOf`` of bare types as a type list."""
    if isinstance(node, list):
        return [_flatten(item, defs, seen) for item in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        name = ref.removeprefix("#/$defs/")
        if name in seen:
            raise ValueError(f"a result model may not be recursive ({' -> '.join((*seen, name))})")
        # Keywords beside the $ref (a description, a default) are kept; the model's own title goes.
        target = {key: value for key, value in defs[name].items() if key != "title"}
        return _flatten({**target, **{k: v for k, v in node.items() if k != "$ref"}}, defs, (*seen, name))
    flat = {key: _flatten(value, defs, seen) for key, value in node.items()}
    branches = flat.get("anyOf")
    if not isinstance(branches, list) or "type" in flat:
        return flat
    if all(_bare_type(branch) for branch in branches):
        del flat["anyOf"]
        flat["type"] = [branch["type"] for branch in branches]
    elif len(branches) == 2 and {"type": "null"} in branches:
        # ``Model | None``: every keyword of the model's schema but ``type`` applies to objects
        # only (arrays, for a list), so null passes them all, as it passed the null branch.
        (typed,) = [branch for branch in branches if branch != {"type": "null"}]
        if isinstance(typed, dict) and isinstance(typed.get("type"), str) and set(typed) <= _TYPED_KEYWORDS:
            del flat["anyOf"]
            flat = {**typed, **flat, "type": [typed["type"], "null"]}
    return flat


# Keywords that constrain only values of their schema's own type (and annotations).
_TYPED_KEYWORDS = frozenset(
    {"type", "properties", "required", "additionalProperties", "items", "title", "description", "default"}
)


def _bare_type(branch: Any) -> bool:
    return isinstance(branch, dict) and set(branch) == {"type"} and isinstance(branch["type"], str)


def validation_message(exc: ValidationError) -> str:
    """A short, value-free description of what was wrong with the arguments."""
    problems = []
    for error in exc.errors(include_url=False, include_input=False):
        where = ".".join(str(part) for part in error["loc"]) or "arguments"
        problems.append(f"{where}: {error['msg']}")
    return "; ".join(problems[:10])


class ToolRegistry:
    """Every tool Roundtable serves, by canonical name, and the one table of its spellings.

    A registry made by :meth:`lazy` knows every tool's name from a static table but imports a
    tool's module (and builds its models) only when one of its tools is first looked up, so a
    server that serves a few tools imports those alone; it answers every lookup as the registry
    of all the modules' tools would.
    """

    def __init__(self, specs: Iterable[ToolSpec] = ()):
        self._specs: dict[str, ToolSpec] = {}
        self._names = ToolNames()
        self._pending: dict[str, str] = {}  # tool -> the module that defines it, not imported yet
        self._loading = threading.Lock()
        for spec in specs:
            self.add(spec)

    @classmethod
    def lazy(cls, catalog: Mapping[str, str]) -> ToolRegistry:
        """A registry of the tools ``catalog`` names (tool -> the module whose ``TOOLS`` list holds
        it), each module imported when one of its tools is first looked up. The module must define
        exactly the tools the catalog gives it (else the lookup raises ``ValueError``)."""
        registry = cls()
        for name, module in catalog.items():
            registry._names.add(name)
            registry._pending[name] = module
        return registry

    def add(self, spec: ToolSpec) -> None:
        """Register a tool; a duplicate or ambiguous name is a programming error."""
        if spec.name in self._specs or spec.name in self._pending:
            raise ValueError(f"tool {spec.name} is registered twice")
        self._names.add(spec.name)
        self._specs[spec.name] = spec

    def get(self, name: str) -> ToolSpec | None:
        """The tool whose canonical name is ``name``, if registered."""
        spec = self._specs.get(name)
        if spec is None and self._pending:
            spec = self._load(name)
        return spec

    def resolve(self, spelling: str) -> ToolSpec | None:
        """The tool ``spelling`` names: its canonical name or its underscore alias."""
        canonical = self._names.canonical(spelling)
        return None if canonical is None else self.get(canonical)

    def names(self) -> list[str]:
        """Every registered name, sorted."""
        return sorted({*self._specs, *self._pending})

    def specs(self) -> list[ToolSpec]:
        """Every registered tool, sorted by name (each module of a lazy registry imported)."""
        return self.specs_of(self.names())

    def specs_of(self, names: Iterable[str]) -> list[ToolSpec]:
        """The registered tools among ``names``, sorted by name: only their modules imported."""
        found = (self.get(name) for name in sorted(set(names)))
        return [spec for spec in found if spec is not None]

    def _load(self, name: str) -> ToolSpec | None:
        """Import the module of pending tool ``name`` and register every tool it defines (None:
        ``name`` is no tool)."""
        with self._loading:  # a launch's worker thread and its event loop may both look tools up
            module_name = self._pending.get(name)
            if module_name is None:  # no tool, or one another thread has just loaded
                return self._specs.get(name)
            tools: list[ToolSpec] = importlib.import_module(module_name).TOOLS
            owned = {tool for tool, module in self._pending.items() if module == module_name}
            if {spec.name for spec in tools} != owned or len(tools) != len(owned):
                defined = sorted(spec.name for spec in tools)
                raise ValueError(f"{module_name} defines {defined}, not {sorted(owned)}")
            for spec in tools:
                self._specs[spec.name] = spec
                del self._pending[spec.name]
        return self._specs[name]

    def prepare_schemas(self, names: Iterable[str]) -> None:
        """Build the JSON schemas of the tools ``names`` (cached per model) before anyone lists them:
        pydantic takes tens of milliseconds for a role's tool set, which a launch spends while its
        container starts instead of on its role's first request."""
        self.export_schemas(names)

    def export_schemas(self, names: Iterable[str]) -> dict[str, dict[str, Any]]:
        """The schemas of the tools ``names`` (built if need be), as :meth:`adopt_schemas` takes
        them: ``{tool: {"input": schema, "output": schema or None}}``, to be kept between processes."""
        exported: dict[str, dict[str, Any]] = {}
        for name in sorted(set(names)):
            spec = self.get(name)
            if spec is not None:
                output = None if spec.result_model is None else _output_schema(spec.result_model)
                exported[name] = {"input": _input_schema(spec.args_model), "output": output}
        return exported

    def adopt_schemas(self, exported: object, names: Iterable[str]) -> bool:
        """Take the schemas of the tools ``names`` from ``exported`` (what :meth:`export_schemas`
        gave an earlier process of the same code) instead of building them; ``False``, adopting
        none, unless it holds exactly those tools, each with an input schema and an output schema
        exactly where the tool has a result model."""
        wanted = {name: spec for name in names if (spec := self.get(name)) is not None}
        if not isinstance(exported, Mapping) or set(exported) != set(wanted):
            return False
        adopted: list[tuple[ToolSpec, dict[str, Any], dict[str, Any] | None]] = []
        for name, spec in wanted.items():
            entry = exported[name]
            if not isinstance(entry, Mapping) or set(entry) != {"input", "output"}:
                return False
            input_schema, output_schema = entry["input"], entry["output"]
            if not isinstance(input_schema, dict) or input_schema.get("type") != "object":
                return False
            if (spec.result_model is None) != (output_schema is None):
                return False
            if output_schema is not None and not isinstance(output_schema, dict):
                return False
            adopted.append((spec, input_schema, output_schema))
        for spec, input_schema, output_schema in adopted:  # all checked first: all or none
            _INPUT_SCHEMAS[spec.args_model] = input_schema
            if spec.result_model is not None and output_schema is not None:
                _OUTPUT_SCHEMAS[spec.result_model] = output_schema
        return True
