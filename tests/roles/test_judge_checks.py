"""Executable checks: validation of the raw JSON, and exact evaluation against a diff."""

from __future__ import annotations

import pytest

from roles.providers.judge.checks import (
    MAX_CHECKS,
    MAX_PATTERN,
    CheckKind,
    evaluate,
    validate_check,
    validate_checks,
)
from roles.providers.judge.diff import parse_diff

_DIFF = """\
--- a/app/client.py
+++ b/app/client.py
@@ -1,3 +1,3 @@
 import requests
-r = requests.get(u, timeout=5)
+r = requests.get(u, verify=False)
--- a/web/app.ts
+++ b/web/app.ts
@@ -1,2 +1,2 @@
-const r = await fetch(u, { signal: AbortSignal.timeout(5000) });
+const r = await fetch(u, { signal: AbortSignal.timeout(5000) });
"""


def test_a_valid_check_round_trips() -> None:
    raw = {"kind": "forbid_added", "pattern": r"verify\s*=\s*False", "paths": ["*.py"], "message": "TLS on"}
    check = validate_check(raw)
    assert check.kind is CheckKind.FORBID_ADDED
    assert check.paths == ("*.py",)
    assert validate_check(check.to_dict()) == check
    assert validate_check({"kind": "require_kept", "pattern": "timeout="}).paths == ()


@pytest.mark.parametrize(
    ("raw", "says"),
    [
        ("verify=False", "must be an object"),
        ({"kind": "forbid_added", "pattern": "x", "severity": "high"}, "unknown check field"),
        ({"kind": "forbid_everything", "pattern": "x"}, "check kind must be one of"),
        ({"kind": "forbid_added", "pattern": ""}, "nonempty string"),
        ({"kind": "forbid_added", "pattern": "(unclosed"}, "not a valid regular expression"),
        ({"kind": "forbid_added", "pattern": "x" * (MAX_PATTERN + 1)}, "longer than"),
        ({"kind": "forbid_added", "pattern": "(a+)+$"}, "nests quantifiers"),
        ({"kind": "forbid_added", "pattern": r"(\w*)*x"}, "nests quantifiers"),
        ({"kind": "forbid_added", "pattern": r"(a)\1"}, "backreference"),
        ({"kind": "forbid_added", "pattern": "x*"}, "matches the empty string"),
        ({"kind": "forbid_added", "pattern": "x", "paths": "*.py"}, "list of nonempty glob"),
        ({"kind": "forbid_added", "pattern": "x", "message": 3}, "message must be a string"),
    ],
)
def test_bad_checks_are_refused_with_a_reason(raw: object, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        validate_check(raw)


def test_a_list_names_the_bad_item_and_is_bounded() -> None:
    assert validate_checks(None) == ()
    with pytest.raises(ValueError, match=r"checks\[1\]: check kind"):
        validate_checks([{"kind": "forbid_added", "pattern": "x"}, {"kind": "nope", "pattern": "x"}])
    with pytest.raises(ValueError, match="at most"):
        validate_checks([{"kind": "forbid_added", "pattern": "x"}] * (MAX_CHECKS + 1))
    with pytest.raises(ValueError, match="must be a list"):
        validate_checks({"kind": "forbid_added"})


def test_forbid_added_sees_added_lines_in_its_paths_only() -> None:
    diff = parse_diff(_DIFF)
    python_only = validate_check({"kind": "forbid_added", "pattern": "verify=False", "paths": ["*.py"]})
    typescript_only = validate_check({"kind": "forbid_added", "pattern": "verify=False", "paths": ["web/"]})
    [violation] = evaluate([python_only, typescript_only], diff)
    assert violation.check == python_only
    assert [(line.path, line.number) for line in violation.lines] == [("app/client.py", 2)]
    removed_only = validate_check({"kind": "forbid_added", "pattern": "timeout=5"})
    assert evaluate([removed_only], diff) == []  # a removed line never fails forbid_added


def test_require_kept_fails_on_a_drop_not_on_a_move() -> None:
    diff = parse_diff(_DIFF)
    dropped = validate_check({"kind": "require_kept", "pattern": r"timeout=\d"})
    moved = validate_check({"kind": "require_kept", "pattern": r"AbortSignal\.timeout"})
    [violation] = evaluate([dropped, moved], diff)
    assert violation.check == dropped
    assert [line.text for line in violation.lines] == ["r = requests.get(u, timeout=5)"]
