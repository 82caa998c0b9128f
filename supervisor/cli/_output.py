"""Printing command results: one JSON object with ``--json``, readable text otherwise."""

from __future__ import annotations

import json
import sys
from typing import Any, TextIO

from store.errors import RoundtableError, error_body

__all__ = ["emit", "emit_error", "render_text"]


def emit(body: dict[str, Any], *, as_json: bool, out: TextIO | None = None) -> None:
    """Print a command's answer."""
    stream = out or sys.stdout
    if as_json:
        stream.write(json.dumps(body, ensure_ascii=False, sort_keys=True) + "\n")
    else:
        stream.write(render_text(body) + "\n")
    stream.flush()


def emit_error(exc: RoundtableError, *, as_json: bool) -> None:
    """Print a structured error: :func:`~store.errors.error_body` on stdout with ``--json``, one
    line on stderr otherwise."""
    if as_json:
        sys.stdout.write(json.dumps(error_body(exc)) + "\n")
        sys.stdout.flush()
    else:
        sys.stderr.write(f"error [{exc.code}]: {exc.message}\n")


def _entry_line(entry: dict[str, Any]) -> str:
    score = f"  score={entry['score']}" if "score" in entry else ""
    checks = entry.get("checks") or []
    shown = "".join(f"\n    - {check.get('kind')}: {check.get('pattern')}" for check in checks)
    return (
        f"{entry.get('id')}  [{entry.get('scope')}/{entry.get('kind')}]  {entry.get('title')}"
        f"  (importance={entry.get('importance')}, status={entry.get('status')}{score})"
    ) + (f"\n    checks: {len(checks)}{shown}" if checks else "")


def render_text(body: dict[str, Any]) -> str:
    """A human rendering of the common answer shapes; anything else as indented JSON."""
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
    return json.dumps(body, indent=2, ensure_ascii=False, sort_keys=True)
