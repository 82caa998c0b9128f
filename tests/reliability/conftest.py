"""The reliability suite's fixtures and its end-of-run summary (see ``docs/reliability.md``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.conftest import scene
from tests.reliability.summary import SUMMARY, Summary

__all__ = ["scene"]  # the review scene of the end-to-end tests, reused by the container faults

REPO_ROOT = Path(__file__).resolve().parents[2]
SUMMARY_PATH = REPO_ROOT / "test-artifacts" / "reliability-summary.json"


@pytest.fixture
def reliability() -> Summary:
    """The run's counters."""
    return SUMMARY


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Print the figures and write them as JSON when any reliability test ran."""
    if not SUMMARY.used():
        return
    SUMMARY.write(SUMMARY_PATH)
    terminalreporter.section("reliability summary")
    for line in SUMMARY.render():
        terminalreporter.write_line(line)
    terminalreporter.write_line(f"written to {SUMMARY_PATH.relative_to(REPO_ROOT)}")
