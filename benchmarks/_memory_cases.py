"""The query rows of ``bench_memory``: what each asks ``memory.query``, and its extra baselines."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from benchmarks._corpus import Corpus

__all__ = ["TASK", "Case", "realistic_cases", "vocabulary_cases"]

TASK = "T-0042"
"""A task scope of the realistic corpus (about 14 entries per 100,000): the oracle's own scope."""


@dataclass(frozen=True)
class Case:
    """One query row: what ``memory.query`` is asked, and which extra baselines it is shown with."""

    label: str
    query: str
    options: dict[str, Any] = field(default_factory=dict)
    scan_path: bool = False
    bare_fetch: bool = False
    read_all: bool = False
    """Also the bare scan of a needle found nowhere: it reads every row's text to its end, as a
    score of a needle in every entry must (the bare scan of that needle stops at its first hit)."""
    every_match: bool = False
    """Also the same ranked query answered by scoring every match that passes the filters from
    its stored terms (what the ranked search fell back to before its lists were whole)."""
    as_json: bool = False
    goal: str = ""
    rounds: int = 1
    """Repetitions per ``--repeat`` (cheap rows take more, for a steadier p95)."""


def vocabulary_cases() -> list[Case]:
    """The rows of the 34-word corpus, as this benchmark always ran them."""
    return [
        Case("query 'rollback' (common word)", "rollback", scan_path=True),
        Case("query 'sql builder' (rare phrase)", "sql builder", scan_path=True),
        Case("query 'zzz-absent' (no match)", "zzz-absent", scan_path=True),
        Case("query 'rollback' scope=project", "rollback", {"scope": "project"}),
        Case("query '' (empty: by importance)", ""),
        Case("query 'rollback' limit=0 (all matches)", "rollback", {"limit": 0}, bare_fetch=True),
        Case("query 'rollback cache' match=ranked", "rollback cache", {"match": "ranked"}),
    ]


def _substring(label: str, query: str, options: dict[str, Any] | None = None, **more: Any) -> Case:
    """A substring row, shown beside the forced scan path as well."""
    return Case(f"substring '{query}' {label}", query, options or {}, scan_path=True, **more)


def _ranked(label: str, query: str, options: dict[str, Any] | None = None, **more: Any) -> Case:
    """A ranked row, shown beside the same query scoring every match as well."""
    return Case(
        f"ranked '{query}' {label}", query, {"match": "ranked", **(options or {})}, every_match=True, **more
    )


def realistic_cases(corpus: Corpus, *, full: bool) -> list[Case]:
    """The rows of the realistic corpus; ``full`` adds the costlier extra baselines."""
    terms = corpus.terms
    project = {"scope": "project"}
    granted = {"allowed_scopes": frozenset({"project", TASK})}  # a launched role's grant
    fast, no_slower = "p95 <= 5 ms, x0.05", "<= the scan path"
    return [
        _ranked("(mid words)", terms.ranked[0], goal=fast, rounds=3),
        _ranked("(word and identifier)", terms.ranked[1], goal=fast, rounds=3),
        _ranked("(common pair)", terms.ranked[2], goal=fast, rounds=3),
        _ranked("(three common words)", "cache index query", goal=fast, rounds=3),
        _ranked("scope=project", terms.ranked[0], project, goal=fast, rounds=3),
        _ranked("scope=project", terms.ranked[1], project, goal=fast, rounds=3),
        _ranked("scope=project", terms.ranked[2], project, goal=fast, rounds=3),
        _ranked(f"scopes project+{TASK}", terms.ranked[1], granted, goal=fast, rounds=3),
        _ranked(f"scope={TASK}", terms.ranked[2], {"scope": TASK}, goal=fast, rounds=3),
        _ranked("kind=constraint", terms.ranked[2], {"kind": "constraint"}, goal=fast, rounds=3),
        _substring("(rare word)", terms.rare, goal="x0.10", rounds=3),
        _substring("(rare identifier)", terms.rare_identifier, goal="x0.10", rounds=3),
        _substring("scope=project", terms.rare, project, rounds=3),
        _substring("(common)", terms.common, goal=no_slower),
        _substring("scope=project", terms.common, project, goal=no_slower),
        _substring("(in every entry)", terms.very_common, goal=no_slower, read_all=True),
        _substring("(2 chars: no trigram, scans)", "ab"),
        Case("query '' (empty: by importance)", ""),
        Case(
            f"'{terms.common}' limit=0 (every match)",
            terms.common,
            {"limit": 0},
            bare_fetch=True,
            as_json=full,
            goal="<= x3.00",
        ),
        Case(
            f"ranked '{terms.ranked[2]}' limit=0 (every match)",
            terms.ranked[2],
            {"match": "ranked", "limit": 0},
        ),
    ]
