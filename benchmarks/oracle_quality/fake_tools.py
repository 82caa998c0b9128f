"""An in-process stand-in for the MemoryOracle's six tools, serving one scenario's data.

The shapes follow CONTRACTS.md ("Oracle tools", "Memory tools") and the real handlers in
``capabilities/tools/oracle.py`` and ``store/oracle.py``: ``task.history`` lists only active
entries in the task and project scopes, ``memory.query`` searches the allowed scopes and keeps
stale entries unless asked not to, and ``oracle.warn`` refuses (``invalid_citation``) any cited
entry that is missing, not active, or outside ``{T, "project"}``, writing nothing.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Any

from benchmarks.oracle_quality.loader import Scenario
from roles.tools import ToolCallError

__all__ = ["FakeOracleTools"]

_STAMP = "2026-01-01T00:00:{:02d}Z"
_ALLOWED_TOOLS = frozenset(
    {"task.history", "patch.inspect", "memory.query", "memory.record", "memory.summarize", "oracle.warn"}
)
_FILES = re.compile(r"^(?:\+\+\+|---) (?:[ab]/)?(\S+)", re.MULTILINE)


@dataclass
class FakeOracleTools:
    """A :class:`roles.tools.ToolCaller` over one scenario; it records every call and warning."""

    scenario: Scenario
    proposal_id: str = "P-bench"
    calls: list[str] = field(default_factory=list)
    warnings: list[dict[str, Any]] = field(default_factory=list)
    recorded: list[dict[str, Any]] = field(default_factory=list)
    _next_event: int = 100

    def __post_init__(self) -> None:
        self.entries: list[dict[str, Any]] = [
            {
                "id": m.id,
                "scope": m.scope,
                "kind": m.kind,
                "title": m.title,
                "body_md": m.body,
                "source_event_id": 0,
                "importance": m.importance,
                "status": m.status,
                "created_at": _STAMP.format(index),
                "updated_at": _STAMP.format(index),
                "revision": 1,
                "source_proposal_id": None,
                **({"checks": [dict(c) for c in m.checks]} if m.checks else {}),
            }
            for index, m in enumerate(self.scenario.memory)
        ]

    @property
    def allowed_scopes(self) -> frozenset[str]:
        """The grant's scopes: the task and ``project``."""
        return frozenset({self.scenario.task, "project"})

    async def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """Serve one tool call like the real capability would."""
        self.calls.append(tool)
        if tool not in _ALLOWED_TOOLS:
            raise ToolCallError(tool, "forbidden", f"{tool} is not in the MemoryOracle's allow-list")
        handler = {
            "task.history": self._history,
            "patch.inspect": self._inspect,
            "memory.query": self._query,
            "memory.record": self._record,
            "memory.summarize": self._summarize,
            "oracle.warn": self._warn,
        }[tool]
        return handler(arguments)

    def _visible(self) -> list[dict[str, Any]]:
        return [e for e in self.entries if e["scope"] in self.allowed_scopes]

    def _history(self, arguments: dict[str, Any]) -> dict[str, Any]:
        task = self.scenario.task
        proposal = {
            "id": self.proposal_id,
            "task_id": task,
            "title": self.scenario.title,
            "status": "in_review",
        }
        events = [
            {
                "id": 2,
                "type": "proposal.review_requested",
                "created_at": _STAMP.format(59),
                "actor": "op",
                "task_id": task,
                "proposal_id": self.proposal_id,
                "payload": {},
            },
            {
                "id": 1,
                "type": "proposal.created",
                "created_at": _STAMP.format(58),
                "actor": "implementer-1",
                "task_id": task,
                "proposal_id": self.proposal_id,
                "payload": {},
            },
        ]
        memories = [e for e in reversed(self._visible()) if e["status"] == "active"]
        return {
            "task": {"id": task, "title": self.scenario.title, "body_md": "", "status": "open"},
            "proposal": proposal,
            "proposals": [proposal],
            "decisions": [],
            "events": events,
            "memories": memories[:100],
            "truncated": {
                "proposals": False,
                "decisions": False,
                "events": False,
                "memories": len(memories) > 100,
            },
        }

    def _inspect(self, arguments: dict[str, Any]) -> dict[str, Any]:
        limit = int(arguments.get("max_bytes", 65536))
        if not 1 <= limit <= 1_048_576:
            raise ToolCallError(
                "patch.inspect", "invalid_argument", "max_bytes must lie between 1 and 1048576"
            )
        data = self.scenario.diff.encode("utf-8")
        files = list(dict.fromkeys(p for p in _FILES.findall(self.scenario.diff) if p != "/dev/null"))
        return {
            "proposal_id": self.proposal_id,
            "version": 1,
            "sha256": hashlib.sha256(data).hexdigest(),
            "size_bytes": len(data),
            "content": data[:limit].decode("utf-8", errors="ignore"),
            "truncated": len(data) > limit,
            "files": files,
        }

    def _query(self, arguments: dict[str, Any]) -> dict[str, Any]:
        scope = arguments.get("scope")
        if scope is not None and scope not in self.allowed_scopes:
            raise ToolCallError("memory.query", "forbidden", f"scope {scope!r} is outside this capability")
        query = arguments.get("query")
        ranked = arguments.get("match") == "ranked"
        found = []
        for entry in self._visible():
            if scope is not None and entry["scope"] != scope:
                continue
            if arguments.get("kind") is not None and entry["kind"] != arguments["kind"]:
                continue
            if arguments.get("exclude_stale") and entry["status"] == "stale":
                continue
            text = [str(entry[k]).lower() for k in ("title", "body_md", "scope", "kind")]
            if not isinstance(query, str) or not query:
                score = int(entry["importance"])
            elif ranked:
                score = sum(1 for word in query.lower().split() if any(word in t for t in text))
            else:
                score = sum(t.count(query.lower()) for t in text)
            if score > 0 or not query:
                found.append({**entry, "score": score})
        found.sort(key=lambda e: (-e["score"], -int(e["importance"]), e["id"]))
        limit = int(arguments.get("limit", 10))
        return {"entries": found[:limit] if limit > 0 else found}

    def _record(self, arguments: dict[str, Any]) -> dict[str, Any]:
        for key in ("scope", "kind", "title", "body_md"):
            if not isinstance(arguments.get(key), str) or not arguments[key].strip():
                raise ToolCallError("memory.record", "invalid_argument", f"{key} must be a nonempty string")
        if arguments["scope"] not in self.allowed_scopes:
            raise ToolCallError("memory.record", "forbidden", "scope outside this capability")
        entry = {
            "id": f"M-rec-{len(self.recorded) + 1}",
            "scope": arguments["scope"],
            "kind": arguments["kind"],
            "title": arguments["title"],
            "body_md": arguments["body_md"],
            "source_event_id": int(arguments.get("source_event_id", 0)),
            "importance": int(arguments.get("importance") or 50),
            "status": str(arguments.get("status", "active")),
            "created_at": _STAMP.format(60),
            "updated_at": _STAMP.format(60),
            "revision": 1,
            "source_proposal_id": self.proposal_id,
        }
        self.recorded.append(entry)
        return {"entry": entry}

    def _summarize(self, arguments: dict[str, Any]) -> dict[str, Any]:
        entries = [e for e in self._visible() if e["status"] != "stale"]
        lines = [f"# {self.scenario.task}"] + [
            f"- {e['kind']}: {e['title']}: {e['body_md']}" for e in entries
        ]
        return {"entries": entries, "entry_count": len(entries), "summary_md": "\n".join(lines)}

    def _warn(self, arguments: dict[str, Any]) -> dict[str, Any]:
        message = arguments.get("message_md")
        if not isinstance(message, str) or not message.strip() or len(message) > 20_000:
            raise ToolCallError("oracle.warn", "invalid_argument", "message_md must be a nonblank string")
        severity = arguments.get("severity", "warning")
        if severity not in ("info", "warning", "critical"):
            raise ToolCallError("oracle.warn", "invalid_argument", "bad severity")
        cited = arguments.get("cited_memory_ids")
        if not isinstance(cited, list) or not cited or not all(isinstance(i, str) and i for i in cited):
            raise ToolCallError("oracle.warn", "invalid_citation", "cite at least one memory entry")
        by_id = {e["id"]: e for e in self.entries}
        problems = []
        for memory_id in dict.fromkeys(cited):
            entry = by_id.get(memory_id)
            if entry is None:
                problems.append(f"{memory_id}: no such memory entry")
            elif entry["status"] != "active":
                problems.append(f"{memory_id}: status is {entry['status']!r}, not 'active'")
            elif entry["scope"] not in self.allowed_scopes:
                problems.append(f"{memory_id}: outside the task and project scopes")
        if problems:
            raise ToolCallError("oracle.warn", "invalid_citation", "invalid citation: " + "; ".join(problems))
        self._next_event += 1
        payload = {
            "proposal_id": self.proposal_id,
            "task_id": self.scenario.task,
            "patch_version": 1,
            "message_md": message,
            "severity": severity,
            "cited_memory_ids": list(dict.fromkeys(cited)),
            "cited_event_ids": list(arguments.get("cited_event_ids") or []),
        }
        event = {"id": self._next_event, "type": "memory.oracle_warning", "payload": payload}
        self.warnings.append(event)
        return {"event": event}
