"""Junk for the hostile-input tests: values of every JSON type, sizes and encodings."""

from __future__ import annotations

import random
from typing import Any

from hypothesis import strategies as st

__all__ = ["HUGE", "JUNK", "junk_value", "value_for"]

HUGE = "x" * 300_000
_NESTED: dict[str, Any] = {"a": {"b": {"c": [1, {"d": None, "e": ["\x00"]}]}}}

JUNK: st.SearchStrategy[Any] = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=40),
    st.text(alphabet=st.characters(min_codepoint=0x80, max_codepoint=0x10FFFF), max_size=20),
    st.sampled_from(["", " ", "\x00", "a\x00b", "../../etc/passwd", "/abs", "\u202e", "\ud800", HUGE]),
    st.lists(st.one_of(st.integers(), st.text(max_size=5), st.none()), max_size=4),
    st.dictionaries(st.text(max_size=6), st.one_of(st.integers(), st.text(max_size=4)), max_size=3),
    st.just(_NESTED),
)
"""Any JSON-ish value a hostile caller could send (plus a lone surrogate and a NUL)."""


def value_for(schema: dict[str, Any], known: list[str]) -> st.SearchStrategy[Any]:
    """Mostly well-typed values for an advertised property (with known IDs), sometimes junk."""
    kind = schema.get("type")
    typed: st.SearchStrategy[Any]
    if kind == "string":
        typed = st.one_of(
            st.sampled_from(known), st.text(max_size=60), st.sampled_from(schema.get("enum", ["x"]))
        )
    elif kind == "integer":
        typed = st.integers(min_value=-5, max_value=2_000_000)
    elif kind == "boolean":
        typed = st.booleans()
    elif kind == "array":
        typed = st.lists(
            st.one_of(st.sampled_from(known), st.text(max_size=10), st.integers(0, 100)), max_size=4
        )
    else:
        typed = JUNK
    return st.one_of(typed, typed, JUNK)


def junk_value(rng: random.Random, known: list[str]) -> Any:
    """A random hostile value for the HTTP fuzzing loop (a seeded generator, not hypothesis)."""
    choices: list[Any] = [
        None,
        True,
        -1,
        0,
        2**63,
        1.5,
        float("inf"),
        "",
        "\x00",
        "..",
        "../../etc/passwd",
        "%2e%2e%2f",
        "\u202e\u0000\uffff",
        "x" * rng.choice([10, 5000, 200_000]),
        [],
        [1, "a", None],
        {},
        _NESTED,
        rng.choice(known) if known else "M-none",
        "".join(chr(rng.randrange(1, 0x2FFF)) for _ in range(rng.randrange(1, 30))),
    ]
    return rng.choice(choices)
