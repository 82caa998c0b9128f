"""Run providers over the scenarios and score their warnings against the labels.

Scoring, per scenario: a labelled entry cited by at least one warning is a true positive (counted
once); a warning citing no labelled entry is a false positive; a labelled entry no warning cites is
a false negative. Precision, recall and F1 are computed from the sums over a group of scenarios;
"false warnings per clean patch" and "per trap patch" divide the false positives of those classes
by their number of scenarios.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any

from benchmarks.oracle_quality.fake_tools import FakeOracleTools
from benchmarks.oracle_quality.loader import CLASSES, Scenario
from roles.providers.base import ProviderReport
from roles.tools import ToolCaller

__all__ = ["PROVIDERS", "Outcome", "Score", "run_provider", "score", "summarise"]

ProviderRun = Callable[[ToolCaller], Awaitable[ProviderReport]]


def _providers() -> dict[str, ProviderRun]:
    from roles.providers.judge import run_judge
    from roles.providers.lexical import run_lexical

    return {"judge": run_judge, "lexical": run_lexical}


PROVIDERS: dict[str, ProviderRun] = _providers()


@dataclass(frozen=True)
class Outcome:
    """What one provider did on one scenario."""

    scenario: Scenario
    provider: str
    cited: tuple[frozenset[str], ...]
    error: str | None = None

    @property
    def true_positives(self) -> int:
        """Labelled entries cited by some warning."""
        return len(self.scenario.expected & frozenset().union(*self.cited)) if self.cited else 0

    @property
    def false_positives(self) -> int:
        """Warnings that cite no labelled entry."""
        return sum(1 for ids in self.cited if not ids & self.scenario.expected)

    @property
    def false_negatives(self) -> int:
        """Labelled entries no warning cites."""
        return len(self.scenario.expected) - self.true_positives


@dataclass(frozen=True)
class Score:
    """Sums and rates over a group of outcomes."""

    scenarios: int
    tp: int
    fp: int
    fn: int

    @property
    def precision(self) -> float | None:
        """TP / (TP + FP); None when nothing was warned."""
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else None

    @property
    def recall(self) -> float | None:
        """TP / (TP + FN); None when nothing was labelled."""
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else None

    @property
    def f1(self) -> float | None:
        """The harmonic mean of precision and recall (0 when either is 0 or missing with labels)."""
        if self.tp + self.fn == 0:
            return None
        precision, recall = self.precision or 0.0, self.recall or 0.0
        return 2 * precision * recall / (precision + recall) if precision + recall else 0.0

    @property
    def fp_per_patch(self) -> float:
        """False warnings per scenario of the group."""
        return self.fp / self.scenarios if self.scenarios else 0.0

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape."""
        return {
            "scenarios": self.scenarios,
            "tp": self.tp,
            "fp": self.fp,
            "fn": self.fn,
            "precision": self.precision,
            "recall": self.recall,
            "f1": self.f1,
            "false_warnings_per_patch": self.fp_per_patch,
        }


async def run_provider(name: str, scenario: Scenario) -> Outcome:
    """Run provider ``name`` against ``scenario`` through a fresh fake toolset."""
    tools = FakeOracleTools(scenario)
    error = None
    try:
        await PROVIDERS[name](tools)
    except Exception as exc:  # a failing provider is scored as silent and reported
        error = f"{type(exc).__name__}: {exc}"
    cited = tuple(frozenset(w["payload"]["cited_memory_ids"]) for w in tools.warnings)
    return Outcome(scenario, name, cited, error)


def score(outcomes: Iterable[Outcome]) -> Score:
    """Sum a group of outcomes."""
    items = list(outcomes)
    return Score(
        scenarios=len(items),
        tp=sum(o.true_positives for o in items),
        fp=sum(o.false_positives for o in items),
        fn=sum(o.false_negatives for o in items),
    )


def summarise(outcomes: list[Outcome]) -> dict[str, dict[str, dict[str, Any]]]:
    """Scores per provider and per group: all, each class, and each split (with its classes)."""
    result: dict[str, dict[str, dict[str, Any]]] = {}
    for provider in sorted({o.provider for o in outcomes}):
        mine = [o for o in outcomes if o.provider == provider]
        groups: dict[str, dict[str, Any]] = {"all": score(mine).to_dict()}
        for klass in CLASSES:
            groups[klass] = score(o for o in mine if o.scenario.klass == klass).to_dict()
        for split in ("dev", "holdout"):
            part = [o for o in mine if o.scenario.split == split]
            groups[split] = score(part).to_dict()
            for klass in CLASSES:
                groups[f"{split}/{klass}"] = score(o for o in part if o.scenario.klass == klass).to_dict()
        result[provider] = groups
    return result
