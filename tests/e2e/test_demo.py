"""``roundtable demo``, the command ``make demo`` runs: the whole story in a subprocess, for real."""

from __future__ import annotations

import json
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
    assert warnings[0]["payload"]["evidence"][0]["path"] == "app/users.py"

    text = subprocess.run(
        [*roundtable_argv, "demo"], cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False
    )
    assert text.returncode == 0, text.stderr
    assert "All SQL goes through the query builder" in text.stdout
    # Each warning is shown once, whole: its quote of the decision appears once, not repeated below.
    assert text.stdout.count("Never build SQL strings by hand") == 1
    assert text.stdout.count("quoted patch lines:") == 1
