"""The registry's advertised schemas: generated once per model, handed out as copies; output schemas
written out flat (no ``$ref``, unions of bare types as type lists) with the meaning pydantic gave them."""

from __future__ import annotations

import json
from typing import Any, Literal

import jsonschema
from pydantic import Field

from capabilities.mcp._registry import ToolArgs, ToolCall, ToolRegistry, ToolResult, ToolSpec


def test_each_input_schema_is_a_fresh_copy_of_the_generated_one(registry: ToolRegistry) -> None:
    for spec in registry.specs():
        generated = spec.args_model.model_json_schema()
        generated.pop("title", None)
        first = spec.input_schema()
        assert first == {**generated, "additionalProperties": False}
        # A caller that edits what it was given (the SDK builds its Tool from it) changes nothing
        # the next tools/list advertises.
        first["properties"].clear()
        first["additionalProperties"] = True
        assert spec.input_schema() == {**generated, "additionalProperties": False}
        # Unless the caller says it only serializes them: then the cached schemas themselves.
        assert spec.input_schema(fresh=False) is spec.input_schema(fresh=False)
        assert spec.input_schema(fresh=False) == spec.input_schema()
        if spec.result_model is not None:
            assert spec.output_schema(fresh=False) is spec.output_schema(fresh=False)
            assert spec.output_schema() is not spec.output_schema()


class _Inner(ToolResult):
    name: str
    size: int | None = None


class _Outer(ToolResult):
    inner: _Inner
    maybe: _Inner | None = Field(default=None, description="An optional nested model.")
    many: list[_Inner]
    optional_list: list[int] | None = None
    word: Literal["a", "b"] | None = None
    number: int | float | None = None


_INSTANCES: list[Any] = [
    {"inner": {"name": "x"}, "many": []},
    {"inner": {"name": "x", "size": None}, "many": [{"name": "y", "size": 3}], "maybe": None},
    {"inner": {"name": "x"}, "many": [], "maybe": {"name": "z", "extra": True}, "optional_list": [1, 2]},
    {"inner": {"name": "x"}, "many": [], "word": "a", "number": 1.5},
    {"inner": {"name": "x"}, "many": [], "word": None, "number": None, "optional_list": None},
    {"inner": {"name": 1}, "many": []},
    {"inner": {"name": "x", "size": "3"}, "many": []},
    {"inner": {"name": "x"}, "many": [{"size": 1}]},
    {"inner": {"name": "x"}, "many": [], "maybe": {"size": 1}},
    {"inner": {"name": "x"}, "many": [], "maybe": "not an object"},
    {"inner": {"name": "x"}, "many": [], "optional_list": ["one"]},
    {"inner": {"name": "x"}, "many": [], "word": "c"},
    {"inner": {"name": "x"}, "many": [], "number": "1"},
    {"many": []},
    {"inner": None, "many": []},
]


def test_output_schemas_are_written_without_refs_or_type_unions_and_mean_the_same() -> None:
    pydantic_schema = _Outer.model_json_schema(mode="serialization")
    flat = ToolSpec("t", "d", ToolArgs, _never, result_model=_Outer).output_schema()
    assert flat is not None
    text = json.dumps(flat)
    assert "$ref" not in text and "$defs" not in text
    assert flat["properties"]["maybe"]["type"] == ["object", "null"]
    assert flat["properties"]["maybe"]["description"] == "An optional nested model."
    assert flat["properties"]["number"]["type"] == ["integer", "number", "null"]
    assert "anyOf" in flat["properties"]["word"]  # an enum refuses null: its union stays as it is
    original = jsonschema.Draft202012Validator(pydantic_schema)
    written = jsonschema.Draft202012Validator(flat)
    verdicts = [(original.is_valid(instance), written.is_valid(instance)) for instance in _INSTANCES]
    assert [ours for _, ours in verdicts] == [theirs for theirs, _ in verdicts]
    assert {theirs for theirs, _ in verdicts} == {True, False}


async def _never(call: ToolCall) -> dict[str, Any]:
    raise AssertionError("not called")
