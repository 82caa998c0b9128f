"""Scenario files: what each holds, and how they are read and checked.

Each ``scenarios/*.toml`` file holds ``[[scenario]]`` tables::

    [[scenario]]
    id = "py-tls-keyword"          # unique over all files
    class = "keyword"              # clean | keyword | semantic | trap
    split = "dev"                  # dev | holdout
    language = "python"
    task = "T-7"
    title = "What the proposal does"
    expected = ["M-2"]             # the entries a good oracle cites; empty when nothing is violated
    diff = '''unified diff'''
    [[scenario.memory]]
    id = "M-2"
    kind = "decision"              # decision | constraint | note | summary ...
    scope = "project"              # default "project"; the task ID, or another task's ID
    status = "active"              # default "active"; "stale" for superseded entries
    title = "..."
    body = "..."
    checks = [...]                 # optional executable checks (see roles.providers.judge.checks)

A file may also hold ``[[background]]`` entries (same fields as ``scenario.memory``): they are put
in front of every scenario's own entries, the way a project's standing decisions, notes and old
entries sit beside whatever a task touches.

:func:`load_scenarios` refuses a file whose labels cite an entry that is not active and in scope:
such a label could never be met.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["CLASSES", "SCENARIO_DIR", "MemorySpec", "Scenario", "load_scenarios"]

SCENARIO_DIR = Path(__file__).parent / "scenarios"
CLASSES = ("clean", "keyword", "semantic", "trap")


@dataclass(frozen=True)
class MemorySpec:
    """One memory entry of a scenario."""

    id: str
    kind: str
    title: str
    body: str
    scope: str = "project"
    status: str = "active"
    importance: int = 50
    checks: tuple[dict[str, Any], ...] = ()


@dataclass(frozen=True)
class Scenario:
    """One labelled case: memory, a patch, and the entries that should be cited."""

    id: str
    klass: str
    split: str
    language: str
    task: str
    title: str
    diff: str
    expected: frozenset[str]
    memory: tuple[MemorySpec, ...]
    source: str


def _memory(raw: dict[str, Any]) -> MemorySpec:
    return MemorySpec(
        id=str(raw["id"]),
        kind=str(raw["kind"]),
        title=str(raw["title"]),
        body=str(raw.get("body", raw["title"])),
        scope=str(raw.get("scope", "project")),
        status=str(raw.get("status", "active")),
        importance=int(raw.get("importance", 50)),
        checks=tuple(raw.get("checks", ())),
    )


def _scenario(raw: dict[str, Any], source: str, background: tuple[MemorySpec, ...]) -> Scenario:
    memory = background + tuple(_memory(m) for m in raw["memory"])
    scenario = Scenario(
        id=str(raw["id"]),
        klass=str(raw["class"]),
        split=str(raw.get("split", "dev")),
        language=str(raw["language"]),
        task=str(raw["task"]),
        title=str(raw.get("title", raw["id"])),
        diff=str(raw["diff"]).lstrip("\n"),
        expected=frozenset(str(i) for i in raw.get("expected", ())),
        memory=memory,
        source=source,
    )
    if scenario.klass not in CLASSES:
        raise ValueError(f"{source}: {scenario.id}: unknown class {scenario.klass!r}")
    if scenario.split not in ("dev", "holdout"):
        raise ValueError(f"{source}: {scenario.id}: split must be dev or holdout")
    citable = {m.id for m in memory if m.status == "active" and m.scope in (scenario.task, "project")}
    ids = [m.id for m in memory]
    if len(set(ids)) != len(ids):
        raise ValueError(f"{source}: {scenario.id}: duplicate memory IDs")
    if not scenario.expected <= citable:
        raise ValueError(f"{source}: {scenario.id}: labels {sorted(scenario.expected - citable)} not citable")
    if scenario.klass in ("keyword", "semantic") and not scenario.expected:
        raise ValueError(f"{source}: {scenario.id}: a violation scenario needs a label")
    if scenario.klass == "clean" and scenario.expected:
        raise ValueError(f"{source}: {scenario.id}: a clean scenario has no label")
    return scenario


def load_scenarios(directory: Path = SCENARIO_DIR) -> list[Scenario]:
    """Every scenario of every ``*.toml`` file under ``directory``, in file then file order."""
    scenarios: list[Scenario] = []
    for path in sorted(directory.glob("*.toml")):
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        background = tuple(_memory(m) for m in data.get("background", []))
        scenarios.extend(_scenario(raw, path.name, background) for raw in data.get("scenario", []))
    ids = [s.id for s in scenarios]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise ValueError(f"duplicate scenario IDs: {duplicates}")
    return scenarios
