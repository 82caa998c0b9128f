"""The ``lexical`` provider: a deterministic heuristic that needs no model.

It extracts identifiers, paths and a few concepts (raw SQL) from the lines a patch adds and
removes, looks for active ``decision`` and ``constraint`` entries in the task and project scopes
that name any of them, records one task-scoped summary, and warns once per entry it matched. It is
a word match, labelled as such in every warning; it never claims to detect a contradiction.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from roles.providers.base import ProviderReport, record_summary
from roles.providers.judge.diff import DiffLine, parse_diff
from roles.providers.judge.provider import quoted_lines
from roles.tools import ToolCaller

__all__ = ["CONFIDENCE", "PROVIDER_LABEL", "extract_patch_terms", "run_lexical", "words_of"]

PROVIDER_LABEL = "lexical heuristic (word matching, not a model)"
_GOVERNING_KINDS = frozenset({"decision", "constraint"})
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
_SQL = re.compile(
    r"\b(SELECT\b.+\bFROM|INSERT\s+INTO|UPDATE\b.+\bSET|DELETE\s+FROM|CREATE\s+TABLE|DROP\s+TABLE)\b",
    re.IGNORECASE,
)
_MAX_QUERIES = 12
CONFIDENCE = 0.3
"""What every lexical warning says of itself: a shared word is a weak signal, not a judgment."""
_STOPWORDS = frozenset(
    """
    a an and are as at be but by for from has have if in into is it its of on or that the their this
    to was were will with without all any each every no not only other such than then there these
    they those through use used uses using via when where which while who why how what must should
    can may might never always goes go new old add added remove removed change changed make made
    get set put def class return self cls none null true false import from pass raise try except
    finally async await yield lambda elif else for while with assert del global nonlocal var let
    const function public private static void int str bool float dict list tuple object string
    number value values data file files line lines code test tests todo fixme note args kwargs
    select insert update delete create drop table into values where join order group by limit
    """.split()
)


@dataclass(frozen=True)
class _Match:
    entry: dict[str, Any]
    terms: tuple[str, ...]


def words_of(text: str) -> set[str]:
    """Lower-cased identifier words of ``text``, whole and split at ``_`` and camelCase."""
    found: set[str] = set()
    for ident in _IDENT.findall(text):
        parts = [ident, *ident.split("_"), *_CAMEL.findall(ident)]
        for part in parts:
            word = part.lower().strip("_")
            if len(word) >= 3 and word not in _STOPWORDS and not word.isdigit():
                found.add(word)
    return found


def extract_patch_terms(diff: str, files: Iterable[str]) -> set[str]:
    """Terms a patch changes: words of added and removed lines, touched paths, and concepts."""
    terms: set[str] = set()
    for line in diff.splitlines():
        if line.startswith(("+++", "---")) or not line.startswith(("+", "-")):
            continue
        body = line[1:]
        terms |= words_of(body)
        if _SQL.search(body):
            terms.add("sql")
    for path in files:
        terms |= words_of(path.replace("/", " ").replace(".", " "))
    return terms


async def run_lexical(tools: ToolCaller) -> ProviderReport:
    """Run the MemoryOracle procedure with the lexical heuristic."""
    report = ProviderReport(provider="lexical")
    history = await tools.call("task.history", {})
    patch = await tools.call("patch.inspect", {"max_bytes": 1048576})
    proposal_id = str(history["proposal"]["id"])
    content = str(patch.get("content", ""))
    terms = extract_patch_terms(content, patch.get("files", []))
    parsed = parse_diff(content)
    changed = [*parsed.added_lines(), *parsed.removed_lines()]
    touched = {str(path) for path in patch.get("files", [])}
    if patch.get("truncated"):
        report.notes.append("the patch was larger than 1 MiB; only its first MiB was read")

    candidates: dict[str, dict[str, Any]] = {str(e["id"]): e for e in history.get("memories", [])}
    for term in sorted(terms)[:_MAX_QUERIES]:
        found = await tools.call("memory.query", {"query": term, "limit": 20, "exclude_stale": True})
        for entry in found.get("entries", []):
            candidates.setdefault(str(entry["id"]), entry)

    governing = [
        entry
        for _, entry in sorted(candidates.items())
        if entry.get("status") == "active" and str(entry.get("kind", "")).lower() in _GOVERNING_KINDS
    ]
    matches = []
    for entry in governing:
        shared = terms & words_of(f"{entry.get('title', '')} {entry.get('body_md', '')}")
        if shared:
            matches.append(_Match(entry, tuple(sorted(shared))))

    report.summary_memory_id = await record_summary(
        tools, history, _summary_body(proposal_id, governing, matches)
    )

    for match in matches:
        event = await tools.call(
            "oracle.warn",
            {
                "message_md": _warning_text(match),
                "cited_memory_ids": [str(match.entry["id"])],
                "severity": "warning",
                "confidence": CONFIDENCE,
                "evidence": quoted_lines(_lines_naming(changed, match.terms), touched),
            },
        )
        report.warnings.append(event["event"])
    return report


def _lines_naming(lines: list[DiffLine], terms: tuple[str, ...]) -> list[DiffLine]:
    """The changed lines whose words include one of ``terms``, in diff order."""
    wanted = set(terms)
    return [line for line in lines if wanted & words_of(line.text)]


def _summary_body(proposal_id: str, governing: list[dict[str, Any]], matches: list[_Match]) -> str:
    lines = [
        f"Prior decisions and constraints for {proposal_id}, gathered by the {PROVIDER_LABEL}.",
        "",
    ]
    if not governing:
        lines.append("- No active decision or constraint in the task or project scope.")
    matched = {str(m.entry["id"]): m for m in matches}
    for entry in governing[:20]:
        marker = ""
        if str(entry["id"]) in matched:
            marker = f" (the patch's changed lines share: {', '.join(matched[str(entry['id'])].terms)})"
        lines.append(f"- {entry['kind']} {entry['id']}: {entry['title']}{marker}")
    return "\n".join(lines)


def _warning_text(match: _Match) -> str:
    entry = match.entry
    shared = ", ".join(f"`{term}`" for term in match.terms)
    return (
        f"**Check against {entry['kind']} {entry['id']}: {entry['title']}**\n\n"
        f"The lines this patch adds or removes mention {shared}, which this {entry['kind']} also "
        f"names. A reviewer should confirm the change respects it.\n\n"
        f"_Found by the {PROVIDER_LABEL}: it matched words and did not judge whether the patch "
        f"contradicts the {entry['kind']}._"
    )
