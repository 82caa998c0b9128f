"""Printing command results: one JSON object with ``--json``, a short readable text otherwise.

A command's answer is one dict. With ``--json`` it is printed as it is (the contract external
tests drive). Without it, the command's renderer (``set_defaults(render=...)``, see
:mod:`supervisor.cli._render`) turns it into a few lines or a table; an answer with no renderer
falls back to :func:`render_text`, which never prints raw JSON either.

Colour: only when stdout is a terminal and ``NO_COLOR`` is unset (https://no-color.org); piped
output is plain text. Text from the store (titles, reasons, messages) is untrusted, so control
characters, terminal escape sequences included, are shown escaped (:func:`clean`).

Tables are drawn in :mod:`supervisor.cli._table`, in a few lines, rather than with a table library:
the output is a handful of columns, and the CLI's start-up stays as light as
``tests/supervisor/cli/test_startup_imports.py`` requires.
"""

from __future__ import annotations

import json
import os
import re
import sys

TYPE_CHECKING = False  # typing's flag without importing typing: see supervisor.cli._quick
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TextIO

    from store.errors import RoundtableError

    Renderer = Callable[[dict[str, Any]], str]
    """Turns a command's answer into its readable text."""

__all__ = [
    "clean",
    "emit",
    "emit_error",
    "first_line",
    "paint",
    "render_text",
    "short_id",
    "use_colour",
]

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_STYLES = {"bold": "1", "dim": "2", "red": "31", "green": "32", "yellow": "33", "cyan": "36"}
_colour: bool = False


def use_colour(stream: TextIO) -> bool:
    """Whether to colour output on ``stream``: a terminal, and ``NO_COLOR`` unset or empty."""
    if os.environ.get("NO_COLOR"):
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def paint(text: str, style: str) -> str:
    """``text`` in ``style`` (bold, dim, red, green, yellow, cyan) when colour is on, else as is."""
    if not _colour or style not in _STYLES:
        return text
    return f"\x1b[{_STYLES[style]}m{text}\x1b[0m"


def clean(value: object, width: int | None = None) -> str:
    """``value`` as one line with control characters escaped, cut with ``…`` past ``width``."""
    text = _CONTROL.sub(lambda m: repr(m.group())[1:-1] if m.group() != "\n" else " ", str(value))
    if width is not None and len(text) > width:
        text = text[: width - 1] + "…"
    return text


def first_line(text: object, width: int = 72) -> str:
    """The first nonblank line of a Markdown text, cleaned and cut to ``width``."""
    for line in str(text or "").splitlines():
        if line.strip():
            return clean(line.strip().replace("**", ""), width)
    return ""


def short_id(value: object) -> str:
    """``P-…d1918107289c``: an ID's type and random suffix, for stories where IDs are not typed."""
    text = str(value)
    head, _, tail = text.partition("-")
    suffix = text.rsplit("-", 1)[-1]
    return f"{head}-…{suffix}" if tail and "-" in tail else text


def emit(
    body: dict[str, Any], *, as_json: bool, out: TextIO | None = None, render: Renderer | None = None
) -> None:
    """Print a command's answer: ``body`` as JSON, or its readable text (``render``'s, or
    :func:`render_text`'s)."""
    global _colour  # one process prints one answer
    stream = out or sys.stdout
    if as_json:
        stream.write(json.dumps(body, ensure_ascii=False, sort_keys=True) + "\n")
    else:
        _colour = use_colour(stream)
        stream.write((render or render_text)(body).rstrip("\n") + "\n")
    stream.flush()


def emit_error(exc: RoundtableError, *, as_json: bool) -> None:
    """Print a structured error: :func:`~store.errors.error_body` on stdout with ``--json``, one
    line on stderr otherwise (plus its candidates, for an ambiguous ID prefix)."""
    if as_json:
        from store.errors import error_body

        sys.stdout.write(json.dumps(error_body(exc)) + "\n")
        sys.stdout.flush()
        return
    lines = [f"error [{exc.code}]: {exc.message}"]
    candidates = exc.details.get("candidates")
    if isinstance(candidates, list):
        lines += [f"  {clean(candidate)}" for candidate in candidates]
    sys.stderr.write("\n".join(lines) + "\n")


def _entry_line(entry: dict[str, Any]) -> str:
    score = f"  score={entry['score']}" if "score" in entry else ""
    checks = entry.get("checks") or []
    shown = "".join(f"\n    - {check.get('kind')}: {check.get('pattern')}" for check in checks)
    return clean(
        f"{entry.get('id')}  [{entry.get('scope')}/{entry.get('kind')}]  {entry.get('title')}"
        f"  (importance={entry.get('importance')}, status={entry.get('status')}{score})"
    ) + (f"\n    checks: {len(checks)}{shown}" if checks else "")


def _scalar(value: object) -> str:
    if isinstance(value, list):
        return ", ".join(_scalar(item) for item in value) if value else "(none)"
    if isinstance(value, dict):
        named = value.get("id") or value.get("name")
        return str(named) if named else f"{{{len(value)} fields}}"
    return clean(value, 100)


def _fields(body: dict[str, Any]) -> str:
    """Any other answer as ``key: value`` lines (nested objects named by their ID), never JSON."""
    if not body:
        return "done"
    width = max(len(key) for key in body)
    return "\n".join(f"{key.ljust(width)}  {_scalar(value)}" for key, value in sorted(body.items()))


def render_text(body: dict[str, Any]) -> str:
    """A human rendering of the common answer shapes; anything else as ``key: value`` lines."""
    if "summary_md" in body:
        return str(body["summary_md"]).rstrip()
    if "entries" in body and isinstance(body["entries"], list):
        if not body["entries"]:
            return "(no entries)"
        return "\n".join(_entry_line(entry) for entry in body["entries"])
    if set(body) == {"entry"}:
        entry = body["entry"]
        return _entry_line(entry) + "\n\n" + str(entry.get("body_md", ""))
    if "message" in body and isinstance(body["message"], str):
        return str(body["message"])
    return _fields(body)
