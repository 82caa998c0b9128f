"""Detectors for what a patch leaves out, where a regex over one line cannot see it.

Each takes one :class:`FileChange` and returns the added lines that open an offending block. They
only judge blocks the patch adds whole (their first line is added), so an unchanged block whose
relevant part the diff does not show is never blamed.
"""

from __future__ import annotations

import re

from roles.providers.judge.diff import DiffLine, FileChange

__all__ = [
    "container_without_limits",
    "dockerfile_without_user",
    "job_without_timeout",
    "table_without_primary_key",
]

_ITEM = re.compile(r"^(\s*)-\s+name\s*:\s*\S+")
_JOB = re.compile(r"(\s+)([\w-]+)\s*:\s*")


def _indent(text: str) -> int:
    return len(text) - len(text.lstrip(" "))


def _block(lines: tuple[DiffLine, ...], start: int, indent: int) -> list[DiffLine]:
    """The added lines after ``start`` that are consecutive and indented deeper than ``indent``."""
    block: list[DiffLine] = []
    previous = lines[start].number
    for line in lines[start + 1 :]:
        if line.number != previous + 1:
            break
        if line.text.strip() and _indent(line.text) <= indent:
            break
        block.append(line)
        previous = line.number
    return block


def container_without_limits(change: FileChange) -> list[DiffLine]:
    """New container items (``- name:`` with an ``image:``) in YAML that declare no ``limits:``."""
    if change.language not in ("yaml",):
        return []
    found = []
    for index, line in enumerate(change.added):
        match = _ITEM.match(line.text)
        if not match:
            continue
        block = _block(change.added, index, len(match.group(1)))
        texts = [b.text for b in block]
        if any(re.match(r"\s*image\s*:", t) for t in texts) and not any(
            re.match(r"\s*limits\s*:", t) for t in texts
        ):
            found.append(line)
    return found


def job_without_timeout(change: FileChange) -> list[DiffLine]:
    """New CI jobs (a key with ``runs-on:`` beneath it) that set no ``timeout-minutes``."""
    if change.language != "ci":
        return []
    found = []
    for index, line in enumerate(change.added):
        match = _JOB.fullmatch(line.text)
        if not match or len(match.group(1)) > 4:
            continue
        block = _block(change.added, index, len(match.group(1)))
        texts = [b.text for b in block]
        if any("runs-on:" in t for t in texts) and not any("timeout-minutes:" in t for t in texts):
            found.append(line)
    return found


def dockerfile_without_user(change: FileChange) -> list[DiffLine]:
    """A new Dockerfile whose last stage (after its last ``FROM``) sets no ``USER``."""
    if change.language != "docker" or not change.is_new:
        return []
    last_from = None
    for index, line in enumerate(change.added):
        if re.match(r"\s*FROM\s", line.text, re.I):
            last_from = index
    if last_from is None:
        return []
    stage = change.added[last_from:]
    if any(re.match(r"\s*USER\s+\S", line.text, re.I) for line in stage):
        return []
    if re.match(r"\s*FROM\s+scratch\b|.*distroless.*nonroot", stage[0].text, re.I):
        return []
    return [stage[0]]


def table_without_primary_key(change: FileChange) -> list[DiffLine]:
    """``CREATE TABLE`` statements the patch adds whole that declare no ``PRIMARY KEY``."""
    if change.language != "sql":
        return []
    found = []
    lines = change.added
    for index, line in enumerate(lines):
        if not re.match(r"\s*CREATE\s+TABLE\b", line.text, re.I):
            continue
        body = []
        for follow in lines[index:]:
            body.append(follow.text)
            if ";" in follow.text:
                break
        text = " ".join(body)
        if ";" in text and not re.search(r"\bPRIMARY\s+KEY\b|\bAS\s+SELECT\b|\bLIKE\b", text, re.I):
            found.append(line)
    return found
