"""Run the reliability suite and print its summary: ``python -m benchmarks.reliability_summary``.

``ROUNDTABLE_RELIABILITY_SCALE=10 python -m benchmarks.reliability_summary`` runs it ten times
longer (more kills, rounds, fuzz cases and requests). The figures are also in
``test-artifacts/reliability-summary.json``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
SUMMARY = REPO_ROOT / "test-artifacts" / "reliability-summary.json"


def main() -> int:
    """Run ``pytest tests/reliability``; print the JSON summary; return pytest's exit code."""
    code = subprocess.call([sys.executable, "-m", "pytest", "-q", "tests/reliability"], cwd=REPO_ROOT)
    if SUMMARY.exists():
        print(json.dumps(json.loads(SUMMARY.read_text()), indent=2, sort_keys=True))
    return code


if __name__ == "__main__":
    raise SystemExit(main())
