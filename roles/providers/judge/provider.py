"""The ``judge`` provider: the MemoryOracle procedure with a deterministic judgment, no model.

It reads ``task.history`` (the active entries in the task and project scopes) and the patch,
parses every governing entry (:mod:`~roles.providers.judge.polarity`), evaluates the entry's
executable checks exactly (:mod:`~roles.providers.judge.checks`) and judges the rest
(:mod:`~roles.providers.judge.judge`). It records one task-scoped ``summary`` and warns at most
once per entry: certainly (confidence 1.0, ``critical``) when a check fails, otherwise when the
judged confidence reaches :data:`THRESHOLD`, as ``critical`` from :data:`CRITICAL` up.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from roles.providers.base import ProviderReport, record_summary
from roles.providers.judge.checks import CheckViolation, describe_violation, evaluate, validate_checks
from roles.providers.judge.diff import DiffLine, ParsedDiff, parse_diff
from roles.providers.judge.judge import DiffIndex, Finding, assess
from roles.providers.judge.polarity import GOVERNING_KINDS, parse_entry
from roles.tools import ToolCaller

__all__ = ["CRITICAL", "PROVIDER_LABEL", "THRESHOLD", "governing_entries", "quoted_lines", "run_judge"]

PROVIDER_LABEL = "judge (deterministic rules over the patch's added and removed lines; no model)"
THRESHOLD = 0.62
"""Warn from this judged confidence up: one global value, in the middle of the plateau (0.55-0.70)
where F1 on benchmarks/oracle_quality is highest. Discounted mentions (in strings, in tests, lines
the patch only moves) land below it."""
CRITICAL = 0.9
"""Judged findings from this confidence up, and every failed check, are ``critical``."""
_MAX_QUOTED_CHARS = 240
_MAX_EVIDENCE = 20
_MAX_EVIDENCE_TEXT = 500


@dataclass(frozen=True)
class _Warning:
    """One warning to send: the entry it cites, its Markdown, severity, confidence and quoted lines."""

    entry: dict[str, Any]
    message: str
    severity: str
    confidence: float
    lines: tuple[DiffLine, ...]

    def arguments(self, touched: set[str]) -> dict[str, Any]:
        """The ``oracle.warn`` arguments."""
        return {
            "message_md": self.message,
            "cited_memory_ids": [str(self.entry["id"])],
            "severity": self.severity,
            "confidence": round(self.confidence, 4),
            "evidence": quoted_lines(self.lines, touched),
        }


def quoted_lines(lines: Iterable[DiffLine], touched: set[str]) -> list[dict[str, Any]]:
    """``oracle.warn``'s ``evidence``: each line once, only on files the patch touches, cut to the limits."""
    seen: dict[tuple[str, int], dict[str, Any]] = {}
    for line in lines:
        if line.path in touched and line.number >= 1 and (line.path, line.number) not in seen:
            text = line.text
            if len(text) > _MAX_EVIDENCE_TEXT:
                text = text[: _MAX_EVIDENCE_TEXT - 1] + "…"
            seen[(line.path, line.number)] = {"path": line.path, "line": line.number, "text": text}
            if len(seen) == _MAX_EVIDENCE:
                break
    return list(seen.values())


def governing_entries(history: dict[str, Any], task_id: str) -> list[dict[str, Any]]:
    """Active decisions and constraints in the task or project scope, by ID (stale and foreign ones never)."""
    allowed = {task_id, "project"}
    entries = {
        str(e["id"]): e
        for e in history.get("memories", [])
        if e.get("status") == "active"
        and e.get("scope") in allowed
        and str(e.get("kind", "")).lower() in GOVERNING_KINDS
    }
    return [entries[key] for key in sorted(entries)]


async def _all_entries(tools: ToolCaller, history: dict[str, Any]) -> dict[str, Any]:
    """History's memories, completed through ``memory.query`` when history cut the list at 100."""
    if not history.get("truncated", {}).get("memories"):
        return history
    found = await tools.call("memory.query", {"query": "", "limit": 0, "exclude_stale": True})
    merged = {str(e["id"]): e for e in [*history.get("memories", []), *found.get("entries", [])]}
    return {**history, "memories": list(merged.values())}


def _quote(text: str, *, code: bool = False) -> str:
    text = " ".join(text.split()) if code else text.strip().replace("`", "'")
    return text if len(text) <= _MAX_QUOTED_CHARS else text[: _MAX_QUOTED_CHARS - 1] + "…"


def _finding_message(entry: dict[str, Any], finding: Finding) -> str:
    first = finding.evidence[0]
    lines = [
        f"**Possible conflict with {entry['kind']} {entry['id']}: {entry['title']}** "
        f"(confidence {finding.confidence:.2f})",
        "",
        f"> {_quote(first.clause.quote or first.clause.text, code=True)}",
        "",
        "The patch adds:",
    ]
    for item in finding.evidence:
        line = item.statement.line
        lines.append(f"- `{line.path}:{line.number}`: `{_quote(line.text)}`: {item.reason}")
    lines += ["", f"_Judged by the {PROVIDER_LABEL}. A reviewer should confirm._"]
    return "\n".join(lines)


def _check_message(entry: dict[str, Any], violations: list[CheckViolation]) -> str:
    lines = [
        f"**Fails the executable check of {entry['kind']} {entry['id']}: {entry['title']}** (certain: "
        "confidence 1.00)",
        "",
    ]
    for violation in violations:
        lines += [*describe_violation(violation, _quote), ""]
    lines.append(f"_Evaluated exactly by the {PROVIDER_LABEL}: this is not a judgment call._")
    return "\n".join(lines)


def _check_violations(entry: dict[str, Any], diff: ParsedDiff, notes: list[str]) -> list[CheckViolation]:
    try:
        checks = validate_checks(entry.get("checks"))
    except ValueError as exc:
        notes.append(f"{entry['id']}: checks ignored: {exc}")
        return []
    return evaluate(checks, diff)


async def run_judge(tools: ToolCaller) -> ProviderReport:
    """Run the MemoryOracle procedure with the judge."""
    report = ProviderReport(provider="judge")
    history = await tools.call("task.history", {})
    patch = await tools.call("patch.inspect", {"max_bytes": 1048576})
    task_id = str(history["task"]["id"])
    proposal_id = str(history["proposal"]["id"])
    if patch.get("truncated"):
        report.notes.append("the patch was larger than 1 MiB; only its first MiB was judged")
    diff = parse_diff(str(patch.get("content", "")))
    governing = governing_entries(await _all_entries(tools, history), task_id)
    index = DiffIndex(diff)

    warnings: list[_Warning] = []
    for entry in governing:
        violations = _check_violations(entry, diff, report.notes)
        if violations:
            lines = tuple(line for violation in violations for line in violation.lines[:5])
            warnings.append(_Warning(entry, _check_message(entry, violations), "critical", 1.0, lines))
            continue
        finding = assess(parse_entry(entry), diff, index)
        if finding is not None and finding.confidence >= THRESHOLD:
            severity = "critical" if finding.confidence >= CRITICAL else "warning"
            lines = tuple(item.statement.line for item in finding.evidence)
            message = _finding_message(entry, finding)
            warnings.append(_Warning(entry, message, severity, finding.confidence, lines))

    report.summary_memory_id = await record_summary(
        tools, history, _summary_body(proposal_id, governing, warnings)
    )
    touched = {str(path) for path in patch.get("files", [])}
    for warning in warnings:
        event = await tools.call("oracle.warn", warning.arguments(touched))
        report.warnings.append(event["event"])
    return report


def _summary_body(proposal_id: str, governing: list[dict[str, Any]], warnings: list[_Warning]) -> str:
    lines = [f"Prior decisions and constraints for {proposal_id}, read by the {PROVIDER_LABEL}.", ""]
    if not governing:
        lines.append("- No active decision or constraint in the task or project scope.")
    warned = {str(warning.entry["id"]): warning.confidence for warning in warnings}
    for entry in governing[:30]:
        marker = f" (warned, confidence {warned[str(entry['id'])]:.2f})" if str(entry["id"]) in warned else ""
        lines.append(f"- {entry['kind']} {entry['id']}: {entry['title']}{marker}")
    if governing and not warned:
        lines += ["", "No added line goes against any of them."]
    return "\n".join(lines)
