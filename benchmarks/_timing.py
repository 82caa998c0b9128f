"""Small timing helpers shared by the benchmarks."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["Timing", "percentile", "time_repeated"]


@dataclass(frozen=True)
class Timing:
    """Repeated wall-clock measurements of one operation, in seconds."""

    label: str
    samples: list[float]

    @property
    def median(self) -> float:
        """The median sample."""
        return statistics.median(self.samples)

    def line(self, baseline: Timing | None = None) -> str:
        """``label  median  p95  (ratio to baseline)``."""
        text = (
            f"{self.label:<48} median {self.median * 1000:9.3f} ms"
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
