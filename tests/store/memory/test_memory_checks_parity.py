"""The store's check validator and the role side's agree: one corpus, one verdict.

The store may not import ``roles`` and the role image has no store, so each side has its own
reader of the check format (``store.memory._checks`` is the authority when an entry is recorded;
``roles.providers.judge.checks`` reads them in the container). This corpus holds them together:
every check either side refuses the other refuses too, so a recorded check is never ignored by a
provider, and a check a provider would ignore is never recorded.
"""

from __future__ import annotations

from typing import Any

import pytest

from roles.providers.judge.checks import validate_checks as role_validate
from store.errors import InvalidArgument
from store.memory._checks import validate_checks as store_validate

_OK = {"kind": "forbid_added", "pattern": r"verify\s*=\s*False"}

CORPUS: list[tuple[Any, bool]] = [
    (_OK, True),
    ({"kind": "require_kept", "pattern": "timeout="}, True),
    ({**_OK, "paths": ["app/", "*.py"], "message": "TLS stays on."}, True),
    ({**_OK, "paths": None}, True),
    ({**_OK, "paths": []}, True),
    ({**_OK, "message": ""}, True),
    ({**_OK, "message": "   "}, True),
    ({**_OK, "pattern": r"\bprint\("}, True),
    ({**_OK, "pattern": r"(?i)password\s*="}, True),
    ({**_OK, "pattern": "(ab)+c"}, True),
    ({**_OK, "pattern": r"\d{2,4}"}, True),
    ({**_OK, "pattern": "x" * 200}, True),
    ({**_OK, "message": "m" * 500}, True),
    ({**_OK, "paths": ["p"] * 20}, True),
    ({**_OK, "kind": "forbid_removed"}, False),
    ({**_OK, "kind": None}, False),
    ({"pattern": "x"}, False),
    ({**_OK, "severity": "critical"}, False),
    ({**_OK, "pattern": ""}, False),
    ({**_OK, "pattern": "   "}, False),
    ({**_OK, "pattern": 3}, False),
    ({**_OK, "pattern": "x" * 201}, False),
    ({**_OK, "pattern": "(unclosed"}, False),
    ({**_OK, "pattern": "(a+)+"}, False),
    ({**_OK, "pattern": r"(\w*)*x"}, False),
    ({**_OK, "pattern": "(x|y+){2,}"}, False),
    ({**_OK, "pattern": r"(a)\1"}, False),
    ({**_OK, "pattern": "(?P<q>'|\")(?P=q)"}, False),
    ({**_OK, "pattern": "a*"}, False),
    ({**_OK, "pattern": "^|x"}, False),
    ({**_OK, "paths": "app/"}, False),
    ({**_OK, "paths": [""]}, False),
    ({**_OK, "paths": [3]}, False),
    ({**_OK, "paths": ["p"] * 21}, False),
    ({**_OK, "paths": ["p" * 201]}, False),
    ({**_OK, "message": None}, False),
    ({**_OK, "message": "m" * 501}, False),
    ("verify=False", False),
    (["forbid_added"], False),
]


def _store_accepts(checks: list[Any]) -> bool:
    try:
        store_validate(checks, entry_kind="decision")
    except InvalidArgument:
        return False
    return True


def _role_accepts(checks: list[Any]) -> bool:
    try:
        role_validate(checks)
    except ValueError:
        return False
    return True


@pytest.mark.parametrize(("check", "valid"), CORPUS)
def test_both_validators_give_the_same_verdict(check: Any, valid: bool) -> None:
    assert (_store_accepts([check]), _role_accepts([check])) == (valid, valid)


@pytest.mark.parametrize(("count", "valid"), [(0, True), (20, True), (21, False)])
def test_both_count_the_same_limit(count: int, valid: bool) -> None:
    assert (_store_accepts([_OK] * count), _role_accepts([_OK] * count)) == (valid, valid)


def test_what_the_store_keeps_is_what_the_role_side_reads() -> None:
    stored = store_validate([{**_OK, "paths": [" app/ "], "message": " m "}], entry_kind="decision")
    (check,) = role_validate(stored)
    assert check.to_dict() == stored[0]


def test_the_store_is_stricter_only_with_control_characters() -> None:
    """The store's one text rule refuses control characters; the role side reads what it stored."""
    assert not _store_accepts([{**_OK, "message": "bell\x07"}])
    assert _role_accepts([{**_OK, "message": "bell\x07"}])
