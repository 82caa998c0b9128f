"""Executable checks: machine-checkable conditions a decision or constraint carries.

A memory entry may hold a ``checks`` list; each item is a JSON object::

    {"kind": "forbid_added", "pattern": "verify\\\\s*=\\\\s*False", "paths": ["*.py"],
     "message": "TLS verification must stay on"}
    {"kind": "require_kept", "pattern": "timeout=", "paths": ["app/http/*"], "message": "..."}

- ``forbid_added``: no line the patch adds, in a file matching ``paths``, may match ``pattern``.
- ``require_kept``: in each file matching ``paths``, the patch may not remove more lines matching
  ``pattern`` than it adds (moving such a line is fine; dropping it is not).

``paths`` is optional (every file when missing or empty) and uses shell globs tried on the whole
path, the file name and the directories (``migrations/`` matches everything below it). Patterns
are Python regular expressions, searched (not anchored) in each line's full text, comments
included: a check is exact. :func:`validate_check` turns raw JSON into a :class:`Check` or raises
:class:`ValueError`; the store can call it when an entry is recorded. :func:`evaluate` is pure.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from roles.providers.judge.diff import DiffLine, ParsedDiff, path_matches

__all__ = [
    "MAX_CHECKS",
    "MAX_MESSAGE",
    "MAX_PATTERN",
    "Check",
    "CheckKind",
    "CheckViolation",
    "describe_violation",
    "evaluate",
    "validate_check",
    "validate_checks",
]

MAX_CHECKS = 20
MAX_PATTERN = 200
MAX_MESSAGE = 500
MAX_PATHS = 20
MAX_LINE = 2000
_KEYS = frozenset({"kind", "pattern", "paths", "message"})
# A quantified group that itself contains a quantifier: (a+)+, (\w*)*, (x|y+){2,}: exponential backtracking.
_NESTED = re.compile(r"\((?:[^()\\]|\\.)*(?:[+*]|\{\d*,?\d*\})(?:[^()\\]|\\.)*\)\s*(?:[+*]|\{\d*,\d*\})")
_BACKREF = re.compile(r"\\[1-9]|\(\?P=")


class CheckKind(StrEnum):
    """What a check tests."""

    FORBID_ADDED = "forbid_added"
    REQUIRE_KEPT = "require_kept"


@dataclass(frozen=True)
class Check:
    """One validated check."""

    kind: CheckKind
    pattern: str
    paths: tuple[str, ...] = ()
    message: str = ""
    regex: re.Pattern[str] = field(default=re.compile(""), compare=False, repr=False)

    def to_dict(self) -> dict[str, object]:
        """The JSON shape (what :func:`validate_check` accepts)."""
        return {
            "kind": self.kind.value,
            "pattern": self.pattern,
            "paths": list(self.paths),
            "message": self.message,
        }


@dataclass(frozen=True)
class CheckViolation:
    """A check the patch fails, and the lines that fail it."""

    check: Check
    lines: tuple[DiffLine, ...]


def validate_check(raw: object) -> Check:
    """Turn one raw JSON check into a :class:`Check`; raise :class:`ValueError` saying what is wrong."""
    if not isinstance(raw, Mapping):
        raise ValueError("a check must be an object with kind, pattern, paths and message")
    unknown = sorted(set(raw) - _KEYS)
    if unknown:
        raise ValueError(f"unknown check field(s): {', '.join(map(str, unknown))}")
    kind = raw.get("kind")
    if kind not in {k.value for k in CheckKind}:
        raise ValueError(f"check kind must be one of {', '.join(k.value for k in CheckKind)}, not {kind!r}")
    pattern = raw.get("pattern")
    if not isinstance(pattern, str) or not pattern.strip():
        raise ValueError("check pattern must be a nonempty string")
    if len(pattern) > MAX_PATTERN:
        raise ValueError(f"check pattern is longer than {MAX_PATTERN} characters")
    if _NESTED.search(pattern):
        raise ValueError("check pattern nests quantifiers (like (a+)+), which can take exponential time")
    if _BACKREF.search(pattern):
        raise ValueError("check pattern uses a backreference, which is not supported")
    try:
        regex = re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"check pattern is not a valid regular expression: {exc}") from None
    if regex.search(""):
        raise ValueError("check pattern matches the empty string, so it would match every line")
    paths = raw.get("paths", [])
    if paths is None:
        paths = []
    if not isinstance(paths, list | tuple) or not all(isinstance(p, str) and p.strip() for p in paths):
        raise ValueError("check paths must be a list of nonempty glob strings")
    if len(paths) > MAX_PATHS or any(len(p) > MAX_PATTERN for p in paths):
        raise ValueError(f"check paths: at most {MAX_PATHS} globs of at most {MAX_PATTERN} characters")
    message = raw.get("message", "")
    if not isinstance(message, str) or len(message) > MAX_MESSAGE:
        raise ValueError(f"check message must be a string of at most {MAX_MESSAGE} characters")
    return Check(CheckKind(kind), pattern, tuple(p.strip() for p in paths), message.strip(), regex)


def validate_checks(raw: object) -> tuple[Check, ...]:
    """Validate an entry's whole ``checks`` list (None or missing means no checks)."""
    if raw is None:
        return ()
    if not isinstance(raw, list | tuple):
        raise ValueError("checks must be a list")
    if len(raw) > MAX_CHECKS:
        raise ValueError(f"an entry carries at most {MAX_CHECKS} checks")
    out = []
    for index, item in enumerate(raw):
        try:
            out.append(validate_check(item))
        except ValueError as exc:
            raise ValueError(f"checks[{index}]: {exc}") from None
    return tuple(out)


def _matches(check: Check, line: DiffLine) -> bool:
    return check.regex.search(line.text[:MAX_LINE]) is not None


def evaluate(checks: Iterable[Check], diff: ParsedDiff) -> list[CheckViolation]:
    """Every check ``diff`` fails, in the order given."""
    violations = []
    for check in checks:
        failing: list[DiffLine] = []
        for change in diff.files:
            if not path_matches(change.path, check.paths):
                continue
            added = [line for line in change.added if _matches(check, line)]
            if check.kind is CheckKind.FORBID_ADDED:
                failing.extend(added)
            else:
                removed = [line for line in change.removed if _matches(check, line)]
                if len(removed) > len(added):
                    failing.extend(removed)
        if failing:
            violations.append(CheckViolation(check, tuple(failing)))
    return violations


def describe_violation(
    violation: CheckViolation, quote: Callable[[str], str], *, max_lines: int = 5
) -> list[str]:
    """Markdown lines saying what a failed check forbids and where the patch fails it: the check,
    its message, at most ``max_lines`` quoted lines (each through ``quote``) and how many more."""
    check = violation.check
    verb = "adds a line matching" if check.kind.value == "forbid_added" else "drops lines matching"
    where = f" in {', '.join(check.paths)}" if check.paths else ""
    lines = [f"Check `{check.kind.value}`{where}: the patch {verb} `{quote(check.pattern)}`."]
    if check.message:
        lines.append(f"> {quote(check.message)}")
    lines += [f"- `{line.path}:{line.number}`: `{quote(line.text)}`" for line in violation.lines[:max_lines]]
    if len(violation.lines) > max_lines:
        lines.append(f"- … and {len(violation.lines) - max_lines} more line(s)")
    return lines
