"""The checks step: executable checks evaluated exactly, before a provider that does not judge them.

The ``judge`` provider evaluates the checks of the decisions and constraints it reads itself. For
``lexical`` and ``openai`` the runner calls :func:`run_checks` first: it reads ``task.history``
and the patch, evaluates every check of the governing entries with the judge's evaluator
(:func:`roles.providers.judge.checks.evaluate`, over the judge's diff parser) and warns once per
failed check through ``oracle.warn``, ``critical`` and certain (confidence 1.0, said in the
message: a check is not a judgment call), quoting the lines that fail it. Then the provider runs.
"""

from __future__ import annotations

from typing import Any

from roles.providers.judge.checks import CheckViolation, describe_violation, evaluate, validate_checks
from roles.providers.judge.diff import parse_diff
from roles.providers.judge.provider import governing_entries, quoted_lines
from roles.tools import ToolCaller

__all__ = ["MAX_QUOTED_LINES", "check_warning", "run_checks"]

MAX_QUOTED_LINES = 5
_MAX_LINE_CHARS = 200


def _clip(text: str) -> str:
    text = text.strip().replace("`", "'")
    return text if len(text) <= _MAX_LINE_CHARS else text[: _MAX_LINE_CHARS - 1] + "…"


def check_warning(entry: dict[str, Any], violation: CheckViolation) -> str:
    """The Markdown of one failed check: certain, the check, its message and the lines quoted."""
    lines = [
        f"**Certain: the patch fails a check of {entry['kind']} {entry['id']}: {entry['title']}** "
        "(confidence 1.00)",
        "",
        *describe_violation(violation, _clip, max_lines=MAX_QUOTED_LINES),
        "",
        "_The check was evaluated exactly on the patch's lines: this is not a judgment call._",
    ]
    return "\n".join(lines)


async def run_checks(tools: ToolCaller) -> list[dict[str, Any]]:
    """Evaluate the governing entries' checks on the patch; the ``oracle.warn`` events written."""
    history = await tools.call("task.history", {})
    entries = [e for e in governing_entries(history, str(history["task"]["id"])) if e.get("checks")]
    if not entries:
        return []
    patch = await tools.call("patch.inspect", {"max_bytes": 1048576})
    diff = parse_diff(str(patch.get("content", "")))
    touched = {str(path) for path in patch.get("files", [])}
    events = []
    for entry in entries:
        try:
            checks = validate_checks(entry["checks"])
        except ValueError:
            continue  # the store validated them when recorded; a foreign shape is not ours to judge
        for violation in evaluate(checks, diff):
            answer = await tools.call(
                "oracle.warn",
                {
                    "message_md": check_warning(entry, violation),
                    "cited_memory_ids": [str(entry["id"])],
                    "severity": "critical",
                    "confidence": 1.0,
                    "evidence": quoted_lines(violation.lines, touched),
                },
            )
            events.append(answer["event"])
    return events
