"""The store's one rule for text, labels, integers and decimal strings."""

from __future__ import annotations

import pytest

from store._text import INT64_MAX, INT64_MIN, check_int, check_label, check_text, parse_decimal
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
