"""The store's one rule for text, labels, integers, decimal strings and JSON documents."""

from __future__ import annotations

import pytest

from store._text import (
    INT64_MAX,
    INT64_MIN,
    MAX_JSON_DEPTH,
    check_fraction,
    check_int,
    check_label,
    check_text,
    parse_decimal,
    parse_json,
)
from store.errors import InvalidArgument, InvalidMemory


@pytest.mark.parametrize("text", ["²", "①", "12\n", " 12", "", "-1", "1e3", "١٢", "9" * 19])
def test_parse_decimal_takes_ascii_digits_only(text: str) -> None:
    assert parse_decimal(text) is None


def test_parse_decimal_reads_what_it_takes() -> None:
    assert [parse_decimal(t) for t in ("0", "007", "9" * 18)] == [0, 7, int("9" * 18)]


@pytest.mark.parametrize("label", ["M-1\n", "M-1\r", "\nM-1", "-M", "M 1", "M/1", "", "x" * 201])
def test_labels_are_whole_matches(label: str) -> None:
    with pytest.raises(InvalidArgument):
        check_label("memory_id", label)


def test_text_refuses_control_characters_but_keeps_whitespace() -> None:
    assert check_text("body", "a\tb\nc\r\n", limit=100) == "a\tb\nc\r\n"
    for bad in ("\x00", "\x1b[2J", "\x7f", "\ud800"):
        with pytest.raises(InvalidMemory):
            check_text("body", f"x{bad}", limit=100, error=InvalidMemory)


def test_integers_stay_within_sqlite() -> None:
    assert check_int("n", INT64_MAX) == INT64_MAX and check_int("n", INT64_MIN) == INT64_MIN
    assert check_int("n", None, default=5) == 5
    for bad in (INT64_MAX + 1, INT64_MIN - 1, True, 1.0, "1", None):
        with pytest.raises(InvalidArgument):
            check_int("n", bad)


def test_fractions_are_compared_before_they_become_floats() -> None:
    assert [check_fraction("c", v) for v in (0, 1, 0.25, 1.0)] == [0.0, 1.0, 0.25, 1.0]
    for bad in (10**400, -(10**400), 2**63, 1.5, -0.1, float("nan"), float("inf"), True, "0.5", None):
        with pytest.raises(InvalidMemory, match=r"^confidence must be a number from 0 to 1$"):
            check_fraction("confidence", bad, error=InvalidMemory)


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize(
    ("raw", "why"),
    [
        (_nested(100_000), "nested more than 64"),  # json.loads alone: RecursionError
        ('{"a": ' * 100_000 + "1" + "}" * 100_000, "nested more than 64"),
        (_nested(MAX_JSON_DEPTH + 1), "nested more than 64"),
        ('{"a": [' + _nested(MAX_JSON_DEPTH - 1) + "]}", "nested more than 64"),
        ("NaN", "not valid JSON"),
        ("[1, -Infinity]", "not valid JSON"),
        ("{", "not valid JSON"),
        (b"\xff", "not valid JSON"),
        ("", "not valid JSON"),
    ],
)
def test_parse_json_refuses_what_is_not_json_within_the_depth_limit(raw: str | bytes, why: str) -> None:
    with pytest.raises(InvalidMemory, match=f"^--checks is {why}"):
        parse_json("--checks", raw, error=InvalidMemory)


def test_parse_json_reads_what_it_takes() -> None:
    assert parse_json("body", _nested(MAX_JSON_DEPTH)) == parse_json("body", _nested(MAX_JSON_DEPTH).encode())
    assert parse_json("body", '{"a": [1, "x", null, 2.5]}') == {"a": [1, "x", None, 2.5]}
    assert parse_json("body", "7") == 7
    assert parse_json("body", _nested(3), max_depth=3) == [[[]]]
    with pytest.raises(InvalidArgument, match="more than 2 levels"):
        parse_json("body", _nested(3), max_depth=2)
