"""The quick path of ``roundtable``: a ``--wait`` launch handed to a running ``roundtable serve``.

``roundtable oracle launch P --wait`` and ``roundtable review run P --wait`` with a ``roundtable serve``
on the project need nothing of this process but a socket: the serve resolves the proposal, runs the
launch with its warm pool and answers. :func:`quick_main` sees such a command line before the parser,
the store or the logging are imported, hands the launch off with the standard library only
(:mod:`supervisor.cli._handoff`) and prints what the in-process command prints (the same progress
lines, answer, structured errors and exit status: :mod:`supervisor.cli._launch_text`,
:mod:`supervisor.cli._output`). Any other command line, or one it does not read exactly (an
abbreviated flag, ``--help``, ``--provider``, a bad ``--timeout``), and a project with no serve
(or an untrusted or stale one) return None: the full command runs, as it always did. For an
``oracle launch`` that runs in-process, it first starts the launch's container from the project's
recipe (:mod:`supervisor.docker._prestart`): :func:`take_prestart` hands it to the launch,
:func:`discard_prestart` removes it when the command ends without one.

What this path imports is the start-up of every launch handed to a serve, so its modules (and the
package roots above them) keep to the lightest of the standard library: ``TYPE_CHECKING`` is a
local ``False`` (mypy honours the name) so that annotations need no ``typing`` at run time, and
``dataclasses``, ``pathlib`` and ``socket.py`` are left out (``tests/supervisor/cli/test_quick.py``).
"""

from __future__ import annotations

import math
import os
import sys

TYPE_CHECKING = False  # typing's flag without importing typing: see the module docstring
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from supervisor.docker import Prestart

__all__ = ["discard_prestart", "quick_main", "take_prestart"]

_prestarted: Prestart | None = None

_COMMANDS = {("oracle", "launch"): "oracle.launch", ("review", "run"): "review.run"}
_FLAGS = frozenset({"--wait", "--json", "-v", "--verbose"})
_VALUED = {"--root": ("oracle.launch", "review.run"), "--timeout": ("oracle.launch",)}


class _Command:
    """A quick-path command line: its operation, the hand-off's arguments and the common flags."""

    def __init__(self, op: str, args: dict[str, Any], root: str | None, as_json: bool):
        self.op = op
        self.args = args
        self.root = root
        self.as_json = as_json


def _parse(argv: Sequence[str]) -> _Command | None:
    """The command line, if it is exactly one the quick path serves; else None."""
    words: list[str] = []
    flags: set[str] = set()
    values: dict[str, str] = {}
    items = iter(argv)
    for item in items:
        name, equals, inline = item.partition("=")
        if name in _VALUED and name not in values:
            value = inline if equals else next(items, None)
            if value is None or (not equals and value.startswith("-")):
                return None
            values[name] = value
        elif item in _FLAGS and not equals:
            flags.add("--verbose" if item == "-v" else item)
        elif item.startswith("-") or len(words) == 3:
            return None
        else:
            words.append(item)
    op = _COMMANDS.get((words[0], words[1])) if len(words) == 3 else None
    if op is None or "--wait" not in flags or any(op not in _VALUED[name] for name in values):
        return None
    args: dict[str, Any] = {"proposal_id": words[2]}
    if op == "oracle.launch":
        timeout = None
        if "--timeout" in values:
            try:
                timeout = float(values["--timeout"])
            except ValueError:
                return None
            if not math.isfinite(timeout):
                return None
        args |= {"provider": None, "timeout": timeout}
    return _Command(op, args, values.get("--root"), "--json" in flags)


def quick_main(argv: Sequence[str]) -> int | None:
    """Run ``argv`` on the project's serve and return the exit status; None to run it in full."""
    command = _parse(argv)
    if command is None:
        return None
    from supervisor.cli import _handoff

    state_dir = _handoff.state_dir_of(command.root)
    target = None if state_dir is None else _handoff.find_serve(state_dir)
    sock = None if target is None else _handoff.connect(target)
    if target is None or sock is None:
        if state_dir is not None and command.op == "oracle.launch":
            _begin_prestart(os.path.dirname(state_dir))
        return None
    from supervisor.cli._launch_text import oracle_launch_answer, progress_printer, review_run_answer

    report = progress_printer(command.as_json)
    try:
        done, body = _handoff.exchange(sock, target, command.op, command.args, report)
    except (_handoff.HandoffBroken, KeyboardInterrupt) as exc:
        from store.errors import InternalError

        broken = str(exc) if isinstance(exc, _handoff.HandoffBroken) else "interrupted"
        return _error(InternalError(broken), command.as_json, 1 if broken != "interrupted" else 130)
    if not done:
        from store.errors import RoundtableError

        try:
            _handoff.raise_error_body(body)
        except RoundtableError as exc:
            return _error(exc, command.as_json, 1)
    from supervisor.cli._output import emit

    answer = oracle_launch_answer(body) if command.op == "oracle.launch" else review_run_answer(body)
    emit(answer, as_json=command.as_json)
    return 0


def _begin_prestart(project_root: str) -> None:
    """Start the cold launch's container now, while the full command loads (the launch's one-shot
    pool adopts it or removes it: :mod:`supervisor.docker._prestart`)."""
    global _prestarted
    from pathlib import Path  # the cold path: the full command imports it anyway

    from supervisor.docker import begin_prestart

    _prestarted = begin_prestart(Path(project_root))


def take_prestart() -> Prestart | None:
    """The container :func:`quick_main` prestarted for this command's launch. It stays known here:
    :func:`discard_prestart` removes it at the end unless a pool adopted it."""
    return _prestarted


def discard_prestart() -> None:
    """Remove a prestarted container no pool adopted (the command ended another way: an error, an
    interruption, a serve that appeared meanwhile) and release its owner lock."""
    global _prestarted
    prestart, _prestarted = _prestarted, None
    if prestart is not None:
        prestart.discard(release_lock=True)


def _error(exc: Any, as_json: bool, status: int) -> int:
    from supervisor.cli._output import emit_error

    emit_error(exc, as_json=as_json)
    sys.stderr.flush()
    return status
