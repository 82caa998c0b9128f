"""The Done thresholds of issue 12, measured on benchmarks/oracle_quality: fails when the judge regresses."""

from __future__ import annotations

import pytest

from benchmarks.oracle_quality.loader import CLASSES, load_scenarios
from benchmarks.oracle_quality.runner import Outcome, run_provider, score

pytestmark = pytest.mark.anyio


async def _outcomes(provider: str) -> list[Outcome]:
    return [await run_provider(provider, scenario) for scenario in load_scenarios()]


def test_the_scenario_set_is_big_varied_and_labelled() -> None:
    scenarios = load_scenarios()
    assert len(scenarios) >= 60
    assert {s.klass for s in scenarios} == set(CLASSES)
    assert len({s.language for s in scenarios}) >= 9
    assert 0.25 <= sum(s.split == "holdout" for s in scenarios) / len(scenarios) <= 0.5
    for s in scenarios:
        assert 6 <= len(s.memory) <= 8, s.id
        assert (s.klass in ("clean", "trap")) == (not s.expected), s.id


async def test_judge_meets_the_done_thresholds() -> None:
    outcomes = await _outcomes("judge")
    assert all(o.error is None for o in outcomes)
    overall = score(outcomes)
    by_class = {k: score(o for o in outcomes if o.scenario.klass == k) for k in CLASSES}
    assert (overall.f1 or 0) >= 0.80
    assert (by_class["keyword"].f1 or 0) >= 0.95
    assert by_class["clean"].fp_per_patch <= 0.1
    assert by_class["trap"].fp_per_patch <= 0.2
    assert (by_class["semantic"].recall or 0) >= 0.70  # reported, and kept from sliding back


async def test_lexical_baseline_runs_in_the_same_harness() -> None:
    outcomes = await _outcomes("lexical")
    assert all(o.error is None for o in outcomes)
    assert score(outcomes).tp > 0
