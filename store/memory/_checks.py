"""Executable checks of a decision or constraint: the store's validator, the authority.

An entry of kind ``decision`` or ``constraint`` may carry ``checks``: a list of at most
:data:`MAX_CHECKS` objects ``{"kind", "pattern", "paths"?, "message"?}`` (docs/memory.md,
"Checks"). The store validates them when an entry is recorded, whichever surface records it,
and stores them as JSON; the oracle's providers evaluate them (``roles.providers.checks_step``
and the judge). The store may not import ``roles`` (and the role image has no store), so the
role side keeps its own reader, ``roles.providers.judge.checks.validate_checks``;
``tests/store/test_memory_checks_parity.py`` holds the two to one verdict on a shared corpus.

This side is written as data: :data:`_UNSAFE` lists the pattern shapes refused (nested
quantifiers backtrack exponentially, backreferences are not regular) and :data:`_LIMITS` the
sizes, so a rule is changed in one row. Text goes through the store's one text rule.
"""

from __future__ import annotations

import json
import re
from typing import Any

from store._text import check_text
from store.errors import InvalidArgument

__all__ = ["CHECKABLE_KINDS", "CHECK_KINDS", "MAX_CHECKS", "checks_json", "merged_checks", "validate_checks"]

MAX_CHECKS = 20
CHECK_KINDS = ("forbid_added", "require_kept")
CHECKABLE_KINDS = frozenset({"decision", "constraint"})
"""The entry kinds that may carry checks (case-insensitive)."""

_LIMITS = {"pattern": 200, "path": 200, "paths": 20, "message": 500}
_FIELDS = frozenset({"kind", "pattern", "paths", "message"})
_UNSAFE: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(shape), why)
    for shape, why in (
        (
            r"\((?:[^()\\]|\\.)*(?:[+*]|\{\d*,?\d*\})(?:[^()\\]|\\.)*\)\s*(?:[+*]|\{\d*,\d*\})",
            "nests quantifiers (like (a+)+), which can take exponential time",
        ),
        (r"\\[1-9]|\(\?P=", "uses a backreference, which is not supported"),
    )
)


def validate_checks(
    raw: object, *, entry_kind: str, error: type[InvalidArgument] = InvalidArgument
) -> list[dict[str, Any]]:
    """``raw`` as the normalized list to store (``[]`` for none), or ``error`` naming the problem."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise error("checks must be a list of check objects")
    if raw and entry_kind.lower() not in CHECKABLE_KINDS:
        raise error(f"checks: only a decision or a constraint may carry checks, not a {entry_kind!r}")
    if len(raw) > MAX_CHECKS:
        raise error(f"checks: an entry carries at most {MAX_CHECKS} checks, not {len(raw)}")
    return [_one(f"checks[{index}]", item, error) for index, item in enumerate(raw)]


def checks_json(checks: list[dict[str, Any]]) -> str | None:
    """The stored column: NULL for no checks."""
    return json.dumps(checks, sort_keys=True) if checks else None


def merged_checks(kind: str, *stored: list[Any]) -> list[dict[str, Any]] | None:
    """The checks of a merge of entries (target first), each once, at most :data:`MAX_CHECKS`;
    ``None`` when there are none or the merged kind may not carry them."""
    unique = {json.dumps(check, sort_keys=True): check for checks in stored for check in checks}
    if not unique or kind.lower() not in CHECKABLE_KINDS:
        return None
    return list(unique.values())[:MAX_CHECKS]


def _one(where: str, item: object, error: type[InvalidArgument]) -> dict[str, Any]:
    if not isinstance(item, dict):
        raise error(f"{where} must be an object with kind, pattern, paths and message")
    extra = sorted(map(str, set(item) - _FIELDS))
    if extra:
        raise error(f"{where}: unknown field(s) {', '.join(extra)}")
    if item.get("kind") not in CHECK_KINDS:
        raise error(f"{where}.kind must be one of {', '.join(CHECK_KINDS)}, not {item.get('kind')!r}")
    pattern = check_text(f"{where}.pattern", item.get("pattern"), limit=_LIMITS["pattern"], error=error)
    for shape, why in _UNSAFE:
        if shape.search(pattern):
            raise error(f"{where}.pattern {why}")
    try:
        compiled = re.compile(pattern)
    except re.error as exc:
        raise error(f"{where}.pattern is not a valid regular expression: {exc}") from None
    if compiled.search(""):
        raise error(f"{where}.pattern matches the empty string, so it would match every line")
    globs = item.get("paths")
    globs = [] if globs is None else globs
    if not isinstance(globs, list) or len(globs) > _LIMITS["paths"]:
        raise error(f"{where}.paths must be a list of at most {_LIMITS['paths']} globs")
    paths = [
        check_text(f"{where}.paths[]", glob, limit=_LIMITS["path"], error=error).strip() for glob in globs
    ]
    message = check_text(
        f"{where}.message", item.get("message", ""), limit=_LIMITS["message"], blank_ok=True, error=error
    )
    return {"kind": item["kind"], "pattern": pattern, "paths": paths, "message": message.strip()}
