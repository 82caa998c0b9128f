"""Small timing helpers shared by the benchmarks."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["Timing", "percentile", "time_repeated", "time_together"]


@dataclass(frozen=True)
class Timing:
    """Repeated wall-clock measurements of one operation, in seconds."""

    label: str
    samples: list[float]

    @property
    def median(self) -> float:
        """The median sample."""
        return statistics.median(self.samples)

    @property
    def p95(self) -> float:
        """The 95th percentile sample (nearest rank)."""
        return percentile(self.samples, 95)

    def line(self, baseline: Timing | None = None) -> str:
        """``label  median  p95  (ratio to baseline)``."""
        text = (
            f"{self.label:<52} median {self.median * 1000:9.3f} ms"
            f"   p95 {percentile(self.samples, 95) * 1000:9.3f} ms"
        )
        if baseline is not None and baseline.median > 0:
            text += f"   x{self.median / baseline.median:6.2f} of baseline"
        return text


def percentile(samples: list[float], pct: float) -> float:
    """The ``pct`` percentile by nearest rank."""
    ordered = sorted(samples)
    index = max(0, min(len(ordered) - 1, round(pct / 100 * len(ordered) + 0.5) - 1))
    return ordered[index]


def time_repeated(label: str, fn: Callable[[], object], *, repeat: int) -> Timing:
    """Run ``fn`` ``repeat`` times (after one warm-up) and keep each duration."""
    fn()
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return Timing(label, samples)


def time_together(*operations: tuple[str, Callable[[], object]], repeat: int) -> list[Timing]:
    """Time operations in turn, round after round (after one warm-up of each), so a burst of load
    on a shared machine falls on all of them alike rather than on one."""
    for _, fn in operations:
        fn()
    samples: list[list[float]] = [[] for _ in operations]
    for _ in range(repeat):
        for (_, fn), into in zip(operations, samples, strict=True):
            start = time.perf_counter()
            fn()
            into.append(time.perf_counter() - start)
    return [Timing(label, taken) for (label, _), taken in zip(operations, samples, strict=True)]
