"""``roundtable demo``, the command ``make demo`` runs: the whole story in a subprocess, for real."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

pytestmark = [pytest.mark.docker, pytest.mark.slow]


def test_the_demo_warns_against_the_decision_it_contradicts_and_only_that(
    tmp_path: Path, roundtable_argv: list[str], role_image_tag: str
) -> None:
    ran = subprocess.run(
        [*roundtable_argv, "--json", "demo"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr
    body = json.loads(ran.stdout)
    assert body["launch"]["status"] == "exited" and body["launch"]["provider"] == "judge"
    warnings = [e for e in body["timeline"]["events"] if e["type"] == "memory.oracle_warning"]
    # The raw-SQL patch goes against the query-builder decision; the logging decision is left alone.
    assert [w["payload"]["cited_memory_ids"] for w in warnings] == [[body["decision"]["id"]]]
    assert body["unrelated_decision"]["title"] == "Logs are structured JSON"
    assert warnings[0]["payload"]["evidence"][0]["path"] == "app/users.py"

    text = subprocess.run(
        [*roundtable_argv, "demo"], cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False
    )
    assert text.returncode == 0, text.stderr
    assert "All SQL goes through the query builder" in text.stdout
    # Each warning is shown once, whole: its quote of the decision appears once, not repeated below.
    assert text.stdout.count("Never build SQL strings by hand") == 1
    assert text.stdout.count("quoted patch lines:") == 1
    # The story is short, with short IDs, and says the oracle left the unrelated decision alone.
    story = text.stdout.splitlines()
    assert len(story) <= 30 and [line[:3] for line in story if line[:1].isdigit()] == [
        "1. ", "2. ", "3. ", "4. ", "5. "
    ], text.stdout  # fmt: skip
    assert not re.search(r"\b[A-Z]-\d{8}T\d{12}Z-[0-9a-f]{12}\b", text.stdout), text.stdout
    left_alone = next(line for line in story if line.startswith("5. "))
    assert "'Logs are structured JSON' alone" in left_alone and "not cited" in left_alone
    assert re.search(r"M-…[0-9a-f]{12}", left_alone)
    # No phase-by-phase log and no packaging noise on stderr: two lines of progress.
    assert len(text.stderr.splitlines()) <= 2, text.stderr
