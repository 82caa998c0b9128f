"""The registry's advertised schemas: generated once per argument model, handed out as copies."""

from __future__ import annotations

from capabilities.mcp._registry import ToolRegistry


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
