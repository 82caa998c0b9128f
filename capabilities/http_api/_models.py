"""Request bodies of the HTTP API: strict pydantic models that reject unknown fields.

They check shapes and types at the boundary (and give the OpenAPI document its schemas); the
store then receives what they parsed and checks meaning (blank text, ranges, secrets): a new entry
through the one validator every creation of an entry shares (:class:`store.memory.NewEntry`).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, StrictFloat, StrictInt, StrictStr

from store import TEXT_PATTERN

__all__ = ["EmptyBody", "MemoryCreate", "ProvenanceSource", "ResynthesisCreate", "RevisionCreate"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class ProvenanceSource(BaseModel):
    """One item of ``provenance.sources``: written as a provenance edge of the new entry."""

    model_config = ConfigDict(extra="allow", strict=True)

    type: StrictStr = Field(description="memory, event, proposal, task, decision, or another label")
    id: StrictStr | StrictInt = Field(description="the source's ID")
    relation: StrictStr = Field(default="derived_from", description="how the entry relates to the source")


class Provenance(BaseModel):
    """Free-form provenance; ``sources`` become provenance edges."""

    model_config = ConfigDict(extra="allow", strict=True)

    sources: list[ProvenanceSource] | None = None


_TEXT: dict[str, Any] = {"pattern": TEXT_PATTERN}
"""Advertises the store's text rule (no NUL or control characters but tab, newline, CR)."""


class MemoryCreate(_Strict):
    """``POST /memories``."""

    scope: StrictStr = Field(
        json_schema_extra=_TEXT, description='"project", a task ID, or another scope label'
    )
    kind: StrictStr = Field(json_schema_extra=_TEXT, description="decision, constraint, fact, ...")
    title: StrictStr = Field(
        json_schema_extra=_TEXT, description="nonblank; recognizable secrets are redacted"
    )
    body_md: StrictStr = Field(
        json_schema_extra=_TEXT, description="nonblank Markdown; recognizable secrets are redacted"
    )
    tags: list[StrictStr] | None = None
    provenance: Provenance | None = None
    source_event_id: StrictInt | None = Field(default=None, ge=0)
    source_session_id: StrictStr | None = None
    source_proposal_id: StrictStr | None = None
    confidence: StrictFloat | StrictInt | None = Field(default=None, description="0..1, default 0.5")
    reliability: StrictFloat | StrictInt | None = Field(default=None, description="0..1, default 0.5")
    importance: StrictInt | None = Field(default=None, description="default 50")
    checks: Any = Field(
        default=None,
        description="executable checks of a decision or constraint (at most 20, see docs/memory.md);"
        " the store validates them (invalid_memory)",
        json_schema_extra={"type": "array", "items": {"type": "object"}},
    )

    def fields(self) -> dict[str, Any]:
        """The fields as parsed, those the body left out omitted (defaults are the store's)."""
        return self.model_dump(exclude_unset=True)


class RevisionCreate(_Strict):
    """``POST /memories/{id}/revisions``."""

    body_md: StrictStr = Field(json_schema_extra=_TEXT, description="the new body; nonblank")
    title: StrictStr | None = Field(default=None, description="a new title; empty or omitted keeps the title")
    reason: StrictStr | None = Field(default=None, description="kept in the revision history")
    expected_revision: StrictInt = Field(description="the revision the change is based on; 409 if it moved")


class ResynthesisCreate(_Strict):
    """``POST /memories/{id}/resynthesize`` (the body is optional)."""

    reason: StrictStr | None = None


class EmptyBody(_Strict):
    """Actions that take no body accept none, or ``{}``."""
