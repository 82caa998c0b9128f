"""List the benchmarks."""

from __future__ import annotations

import pkgutil
from pathlib import Path

for module in sorted(pkgutil.iter_modules([str(Path(__file__).parent)]), key=lambda m: m.name):
    if module.name.startswith("bench_"):
        print(f"python -m benchmarks.{module.name}")
