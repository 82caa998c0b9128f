"""The reliability suite's fixtures and its end-of-run summary (see ``docs/reliability.md``).

The crash and concurrency checks (:data:`POSTGRES_MODULES`) run on both backends, ``[sqlite]`` and
``[postgresql]``, with the store suite's fixtures (``tests/store/conftest.py``): the PostgreSQL run
points ``ROUNDTABLE_STORE_URL`` at a real server for the test, so the child processes it starts
write there too, and drops the project's schema afterwards.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.conftest import scene
from tests.reliability.summary import SUMMARY, Summary
from tests.store.conftest import BACKENDS, pg_url, project, store_backend

# The review scene of the end-to-end tests, reused by the container faults; the store suite's
# backend fixtures, for the checks that run on both.
__all__ = ["pg_url", "project", "scene", "store_backend"]

REPO_ROOT = Path(__file__).resolve().parents[2]
POSTGRES_MODULES = frozenset(
    {"tests/reliability/test_crash_safety.py", "tests/reliability/test_concurrency.py"}
)
"""Reliability modules whose tests also run against PostgreSQL."""


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Run the listed modules' project tests on both backends."""
    if "store_backend" not in metafunc.fixturenames:
        return
    module = Path(str(metafunc.definition.path)).resolve().relative_to(REPO_ROOT).as_posix()
    backends = BACKENDS if module in POSTGRES_MODULES else BACKENDS[:1]
    metafunc.parametrize("store_backend", backends, indirect=True)


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
