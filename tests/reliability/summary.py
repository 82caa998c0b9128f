"""The reliability suite's figures: counters every reliability test adds to, printed and written as JSON.

One :data:`SUMMARY` per pytest process. Tests add what they did (operations acknowledged, crashes and
faults injected, fuzz cases, load held) and what their checks found (``lost`` is the number of
acknowledged writes a check did not find, summed, never set by hand). The conftest prints the table
at the end of the run and writes it to ``test-artifacts/reliability-summary.json``.
"""

from __future__ import annotations

import json
import os
import statistics
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["SCALE", "SUMMARY", "Summary", "percentiles", "scaled"]

SCALE = max(1, int(os.environ.get("ROUNDTABLE_RELIABILITY_SCALE", "1") or "1"))
"""How much longer than the CI size to run (``ROUNDTABLE_RELIABILITY_SCALE=10`` by hand)."""


def scaled(n: int) -> int:
    """``n`` times :data:`SCALE`."""
    return n * SCALE


def percentiles(samples: list[float]) -> dict[str, float]:
    """p50/p95/p99/max of ``samples`` in milliseconds (inclusive method, so small samples work)."""
    if not samples:
        return {"p50_ms": 0.0, "p95_ms": 0.0, "p99_ms": 0.0, "max_ms": 0.0}
    ms = sorted(s * 1000 for s in samples)
    cuts = [ms[0]] * 99 if len(ms) == 1 else statistics.quantiles(ms, n=100, method="inclusive")
    return {
        "p50_ms": round(cuts[49], 2),
        "p95_ms": round(cuts[94], 2),
        "p99_ms": round(cuts[98], 2),
        "max_ms": round(ms[-1], 2),
    }


@dataclass
class Summary:
    """Counters and findings of one run."""

    acknowledged: Counter[str] = field(default_factory=Counter)
    lost: int = 0
    checks: Counter[str] = field(default_factory=Counter)
    problems: list[str] = field(default_factory=list)
    crashes: int = 0
    faults: Counter[str] = field(default_factory=Counter)
    fault_outcomes: dict[str, str] = field(default_factory=dict)
    fuzz: Counter[str] = field(default_factory=Counter)
    concurrency: dict[str, Any] = field(default_factory=dict)
    load: dict[str, Any] = field(default_factory=dict)
    leaked_containers: int = 0
    live_grants_after_end: int = 0
    server_errors: int = 0

    def used(self) -> bool:
        """Whether any reliability test added something."""
        return bool(
            self.acknowledged or self.crashes or self.faults or self.fuzz or self.load or self.concurrency
        )

    def to_dict(self) -> dict[str, Any]:
        """The JSON document."""
        return {
            "scale": SCALE,
            "operations_acknowledged": sum(self.acknowledged.values()),
            "acknowledged_by_kind": dict(sorted(self.acknowledged.items())),
            "lost": self.lost,
            "checks_run": dict(sorted(self.checks.items())),
            "problems": list(self.problems),
            "crashes_injected": self.crashes,
            "faults_injected": dict(sorted(self.faults.items())),
            "fault_outcomes": dict(sorted(self.fault_outcomes.items())),
            "fuzz_cases": dict(sorted(self.fuzz.items())),
            "fuzz_cases_total": sum(self.fuzz.values()),
            "concurrency": self.concurrency,
            "load": self.load,
            "leaked_containers": self.leaked_containers,
            "live_grants_after_end": self.live_grants_after_end,
            "server_errors": self.server_errors,
        }

    def write(self, path: Path) -> None:
        """Write the JSON document (creating its directory)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n", encoding="utf-8")

    def render(self) -> list[str]:
        """The human table."""
        d = self.to_dict()
        lines = [
            f"scale {d['scale']}",
            f"operations acknowledged  {d['operations_acknowledged']}  {d['acknowledged_by_kind']}",
            f"lost                     {d['lost']}",
            f"crashes injected         {d['crashes_injected']}",
            f"faults injected          {sum(self.faults.values())}  {d['faults_injected']}",
        ]
        lines += [f"  {kind:<22} -> {outcome}" for kind, outcome in d["fault_outcomes"].items()]
        lines.append(f"fuzz cases               {d['fuzz_cases_total']} over {len(self.fuzz)} tools/routes")
        if self.concurrency:
            lines.append(f"concurrency              {self.concurrency}")
        if self.load:
            lines.append(f"load                     {self.load}")
        lines.append(
            f"leaked containers {self.leaked_containers}, live grants after end {self.live_grants_after_end},"
            f" 5xx/tracebacks {self.server_errors}, problems {len(self.problems)}"
        )
        lines += [f"  problem: {p}" for p in self.problems[:20]]
        return lines


SUMMARY = Summary()
