"""What text and labels a caller may hand the store: one rule, used by every store.

- :func:`check_text`: a string within a length limit, nonblank unless allowed, valid Unicode (no
  unpaired surrogate, which SQLite cannot store), and free of NUL and the C0/DEL control
  characters other than tab, newline and carriage return. Control characters are refused rather
  than stored because they reach terminals and the console (cursor moves, screen clears).
- :func:`check_int`: an integer (never a bool) within bounds that default to SQLite's 64-bit range.
- :func:`check_fraction`: a number from 0 to 1, compared before it becomes a float (``float(10**400)``
  raises ``OverflowError``).
- :func:`parse_decimal`: digits from a header, a form or a path, ASCII only (not ``str.isdigit``).
- :func:`parse_json`: a JSON document from a body, a flag or a model's answer: strict JSON (no
  ``NaN``), nested at most :data:`MAX_JSON_DEPTH` deep. ``json.loads`` raises ``RecursionError``,
  not ``ValueError``, on ``[[[[...]]]]`` a few thousand deep, and shallower nesting still reaches
  recursive code downstream (pydantic, ``json.dumps``, redaction), so both are refused here;
  :func:`check_depth` is the same limit for JSON another library decoded (MCP arguments).
- :func:`check_label`: an ID or a name: a letter or digit, then letters, digits, ``.``, ``_``,
  ``:``, ``-``, at most :data:`MAX_LABEL_CHARS` in all. Shapes are checked with
  :func:`re.fullmatch`: ``re.match(r"^...$")`` would accept a trailing newline, and ``"M-1\\n"``
  would become a second entry that looks like ``"M-1"``.

The error raised is :class:`~store.errors.InvalidArgument` unless the caller names a subclass
that carries its route's code (``error=``).
"""

from __future__ import annotations

import json
import re
from typing import Any

from store.errors import InvalidArgument

__all__ = [
    "INT64_MAX",
    "INT64_MIN",
    "MAX_JSON_DEPTH",
    "MAX_LABEL_CHARS",
    "TEXT_PATTERN",
    "check_depth",
    "check_fraction",
    "check_int",
    "check_label",
    "check_text",
    "is_label",
    "parse_decimal",
    "parse_json",
]

MAX_LABEL_CHARS = 200
"""The longest ID, agent name, scope label or token name."""

MAX_JSON_DEPTH = 64
"""The deepest nesting of arrays and objects a caller's JSON may have."""

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
"""What SQLite can store: a larger integer would fail in the driver (an ``OverflowError``)."""
_CONTROL_CLASS = r"\x00-\x08\x0b\x0c\x0e-\x1f\x7f"
_CONTROL = re.compile(f"[{_CONTROL_CLASS}]")

TEXT_PATTERN = f"^[^{_CONTROL_CLASS}]*$"
"""The rule of :func:`check_text` as a JSON Schema ``pattern``, for the API documents that advertise it."""
_LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]*")
_DECIMAL = re.compile(r"[0-9]{1,18}")


def check_text(
    name: str,
    value: object,
    *,
    limit: int,
    blank_ok: bool = False,
    error: type[InvalidArgument] = InvalidArgument,
) -> str:
    """``value`` as text fit to store, or ``error`` saying why not."""
    if not isinstance(value, str):
        raise error(f"{name} must be a string")
    if not blank_ok and not value.strip():
        raise error(f"{name} must not be blank")
    if len(value) > limit:
        raise error(f"{name} is longer than {limit} characters")
    if _CONTROL.search(value):
        raise error(f"{name} must not contain NUL or control characters")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise error(f"{name} is not valid Unicode (an unpaired surrogate)") from None
    return value


def is_label(value: object, *, limit: int = MAX_LABEL_CHARS) -> bool:
    """Whether ``value`` has the shape of an ID or a name (the whole string, no trailing newline)."""
    return isinstance(value, str) and len(value) <= limit and _LABEL.fullmatch(value) is not None


def check_label(
    name: str,
    value: object,
    *,
    limit: int = MAX_LABEL_CHARS,
    error: type[InvalidArgument] = InvalidArgument,
) -> str:
    """``value`` as an ID or a name, or ``error`` saying what shape it must have."""
    text = check_text(name, value, limit=limit, error=error)
    if not is_label(text, limit=limit):
        raise error(
            f"{name} may hold only letters, digits, '.', '_', ':' and '-', starting with a letter or digit"
        )
    return text


def check_int(
    name: str,
    value: object,
    *,
    default: int | None = None,
    minimum: int = INT64_MIN,
    maximum: int = INT64_MAX,
    error: type[InvalidArgument] = InvalidArgument,
) -> int:
    """``value`` as an integer from ``minimum`` to ``maximum``; ``default`` when absent, if given.

    ``True`` is not an integer here, and nothing beyond SQLite's 64-bit range gets through.
    """
    if value is None and default is not None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise error(f"{name} must be an integer")
    if not minimum <= value <= maximum:
        raise error(f"{name} must be an integer from {minimum} to {maximum}")
    return value


def check_fraction(name: str, value: object, *, error: type[InvalidArgument] = InvalidArgument) -> float:
    """``value`` (an int or a float, never a bool or NaN) as a float from 0 to 1, or ``error``."""
    # Compared first: NaN fails the comparison, and an int too large for a float never reaches float().
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise error(f"{name} must be a number from 0 to 1")
    return float(value)


def parse_decimal(text: str) -> int | None:
    """``text`` as a non-negative integer if it is 1 to 18 ASCII digits, else ``None``.

    ``str.isdigit`` is not this: it accepts ``"²"`` and ``"①"``, on which ``int`` then fails.
    Eighteen digits always fit SQLite's 64-bit integers.
    """
    return int(text) if _DECIMAL.fullmatch(text) else None


def parse_json(
    name: str,
    raw: str | bytes,
    *,
    max_depth: int = MAX_JSON_DEPTH,
    error: type[InvalidArgument] = InvalidArgument,
) -> Any:
    """``raw`` (text, or bytes in UTF-8) as a JSON value, or ``error`` saying why not.

    Refused: anything that is not strict JSON (``NaN`` and ``Infinity`` included), and arrays and
    objects nested more than ``max_depth`` deep, however deep (never a ``RecursionError``).
    """
    try:
        value = json.loads(raw, parse_constant=_not_json)
    except RecursionError:
        raise error(f"{name} is nested more than {max_depth} levels deep") from None
    except ValueError:  # JSONDecodeError, UnicodeDecodeError, and NaN or Infinity
        raise error(f"{name} is not valid JSON") from None
    check_depth(name, value, max_depth=max_depth, error=error)
    return value


def check_depth(
    name: str,
    value: object,
    *,
    max_depth: int = MAX_JSON_DEPTH,
    error: type[InvalidArgument] = InvalidArgument,
) -> None:
    """``error`` when ``value`` nests lists and dicts more than ``max_depth`` deep (for values
    already decoded by someone else, such as the MCP SDK); iterative, so it cannot overflow itself."""
    pending: list[tuple[object, int]] = [(value, 1)]
    while pending:
        item, depth = pending.pop()
        if isinstance(item, dict | list):
            if depth > max_depth:
                raise error(f"{name} is nested more than {max_depth} levels deep")
            children = item.values() if isinstance(item, dict) else item
            pending.extend((child, depth + 1) for child in children)


def _not_json(constant: str) -> Any:
    raise ValueError(f"{constant} is not JSON")
