"""``python -m benchmarks.oracle_quality [--split dev|holdout|all] [--provider NAME] [--details]``.

Prints one table per provider and writes ``test-artifacts/oracle-quality.json``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import anyio

from benchmarks.oracle_quality.loader import load_scenarios
from benchmarks.oracle_quality.runner import PROVIDERS, Outcome, run_provider, summarise

ARTIFACT = Path("test-artifacts/oracle-quality.json")
_ROWS = (
    "all",
    "clean",
    "keyword",
    "semantic",
    "trap",
    "dev",
    "holdout",
    *(f"holdout/{k}" for k in ("clean", "keyword", "semantic", "trap")),
)


def _fmt(value: object) -> str:
    return "-" if value is None else f"{value:.2f}" if isinstance(value, float) else str(value)


def _table(provider: str, groups: dict[str, dict[str, object]]) -> str:
    lines = [
        f"## {provider}",
        "| group | n | tp | fp | fn | precision | recall | F1 | false warnings/patch |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in _ROWS:
        g = groups[row]
        if not g["scenarios"]:
            continue
        cells = [g[k] for k in ("scenarios", "tp", "fp", "fn", "precision", "recall", "f1")]
        lines.append(
            f"| {row} | " + " | ".join(_fmt(c) for c in cells) + f" | {_fmt(g['false_warnings_per_patch'])} |"
        )
    return "\n".join(lines)


async def _run(split: str, providers: list[str]) -> list[Outcome]:
    scenarios = [s for s in load_scenarios() if split == "all" or s.split == split]
    return [await run_provider(name, s) for name in providers for s in scenarios]


def main() -> None:
    """Run the benchmark and print the tables."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.oracle_quality")
    parser.add_argument("--split", choices=["dev", "holdout", "all"], default="all")
    parser.add_argument("--provider", action="append", choices=sorted(PROVIDERS))
    parser.add_argument("--details", action="store_true", help="list every scenario a provider got wrong")
    args = parser.parse_args()
    outcomes = anyio.run(_run, args.split, args.provider or sorted(PROVIDERS))
    summary = summarise(outcomes)
    for provider, groups in summary.items():
        print(_table(provider, groups), end="\n\n")
    if args.details:
        for o in outcomes:
            if o.false_positives or o.false_negatives or o.error:
                cited = [sorted(c) for c in o.cited]
                expected = sorted(o.scenario.expected)
                print(
                    f"{o.provider} {o.scenario.id} [{o.scenario.klass}] {expected=} {cited=} {o.error or ''}"
                )
    ARTIFACT.parent.mkdir(parents=True, exist_ok=True)
    detail = [
        {
            "provider": o.provider,
            "scenario": o.scenario.id,
            "class": o.scenario.klass,
            "split": o.scenario.split,
            "expected": sorted(o.scenario.expected),
            "cited": [sorted(c) for c in o.cited],
            "error": o.error,
        }
        for o in outcomes
    ]
    ARTIFACT.write_text(
        json.dumps({"summary": summary, "outcomes": detail}, indent=2) + "\n", encoding="utf-8"
    )
    print(f"wrote {ARTIFACT}")


if __name__ == "__main__":
    main()
