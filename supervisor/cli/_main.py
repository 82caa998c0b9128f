"""The ``roundtable`` command line.

Every command accepts ``--root DIR`` and ``--json``. Exit status: 0 on success, 2 on a usage
error (bare ``roundtable`` is one: it prints the whole help on stderr), 1 on any other error;
with ``--json`` an error prints :func:`store.errors.error_body`
(``{"error": {"code", "message"}}``) on stdout. Logs go to stderr. Commands live in
:mod:`supervisor.cli.commands`, one module per area; each registers its subcommands and returns a
JSON-able answer, which is printed as JSON with ``--json`` and otherwise through the command's
renderer (``set_defaults(render=...)``, :mod:`supervisor.cli._render`).

Start-up is kept light: building the parser imports only argparse and the command modules, whose
handlers import what they use (the store, the tool dispatch, the servers, Docker) when they run,
so ``roundtable --help`` imports none of it; the top-level help imports no command module either
(:func:`summary_parser`: each command's line comes from
:data:`~supervisor.cli.commands.SUMMARIES`). ``tests/supervisor/cli/test_startup_imports.py`` holds
the line.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from store.errors import InternalError, InvalidArgument, RoundtableError
from supervisor.cli._output import emit, emit_error
from supervisor.cli.commands import SUMMARIES, command_modules

__all__ = ["asks_top_help", "build_parser", "main", "summary_parser"]


class _UsageError(Exception):
    """Raised instead of argparse's exit so that ``--json`` can shape the error."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise _UsageError(f"{self.prog}: {message}")


def _common_options() -> argparse.ArgumentParser:
    # SUPPRESS: a flag given after the subcommand must not be reset by the subparser's default.
    common = _Parser(add_help=False)
    common.add_argument("--root", metavar="DIR", default=argparse.SUPPRESS, help="the project root")
    common.add_argument(
        "--json", action="store_true", default=argparse.SUPPRESS, help="one JSON object on stdout"
    )
    common.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS, help="debug logs")
    return common


def _top_parser() -> tuple[argparse.ArgumentParser, Any, argparse.ArgumentParser]:
    """The top-level parser, its (empty) subparsers action and the common options."""
    common = _common_options()
    parser = _Parser(
        prog="roundtable",
        description="Roundtable: proposals, votes and durable memory for teams of coding agents.",
        parents=[common],
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    commands.required = True
    return parser, commands, common


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The full parser, with every command module's subcommands; or, for top-level ``command``,
    one with only its module's (it parses that command's lines exactly as the full one does)."""
    parser, commands, common = _top_parser()
    for module in command_modules(command):
        module.register(commands, common)
    return parser


def summary_parser() -> argparse.ArgumentParser:
    """The top-level parser as its help shows it: every command with its one line
    (:data:`~supervisor.cli.commands.SUMMARIES`) and nothing under it, so ``roundtable --help`` and
    bare ``roundtable`` import and build no command module. Its help is the full parser's, word for
    word (``tests/supervisor/cli/test_command_parser.py``)."""
    parser, commands, _ = _top_parser()
    for name, summary in SUMMARIES.items():
        commands.add_parser(name, help=summary)
    return parser


_HELP = ("-h", "--help")
_COMMON_FLAGS = ("--json", "-v", "--verbose")


def asks_top_help(argv: Sequence[str]) -> bool:
    """Whether ``argv`` asks for the top-level help and nothing else: ``-h``/``--help`` among the
    common flags, spelt out whole, before any command."""
    return _first_other(argv) in _HELP and _first_other(argv, skip=_HELP) is None


def _wants_json(argv: Sequence[str]) -> bool:
    return "--json" in argv


def _first_other(argv: Sequence[str], skip: tuple[str, ...] = ()) -> str | None:
    """The first item of ``argv`` that is neither a common flag spelt out whole nor in ``skip``;
    ``--root`` when that flag is last, with no value; None when there is no other item."""
    items = iter(argv)
    for item in items:
        if item == "--root":
            if next(items, None) is None:
                return item
        elif item not in _COMMON_FLAGS and item not in skip and not item.startswith("--root="):
            return item
    return None


def command_word(argv: Sequence[str]) -> str | None:
    """The top-level command ``argv`` names, when only the common flags, spelt out whole, stand
    before it (else None: the full parser reads it, abbreviations and all)."""
    item = _first_other(argv)
    return None if item is None or item.startswith("-") else item


def main(argv: Sequence[str] | None = None, *, exit_when_answered: bool = False) -> int:
    """Run one command; returns the exit status.

    ``exit_when_answered`` (the console script's): a launch command may end the process as soon as
    it has printed its answer, instead of waiting for its sockets' servers to wind down
    (:func:`supervisor.cli._launch_text.print_and_exit`)."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    if not args_list:
        # Bare `roundtable`: the whole help, on stderr with status 2, as argparse treats a missing
        # command (a usage error), so a script that forgot its command still fails.
        summary_parser().print_help(sys.stderr)
        return 2
    as_json = _wants_json(args_list)
    try:
        parser = summary_parser() if asks_top_help(args_list) else build_parser(command_word(args_list))
        args = parser.parse_args(args_list)
    except _UsageError as exc:
        emit_error(InvalidArgument(str(exc)), as_json=as_json)
        return 2
    # The common flags use SUPPRESS (parents share action objects, so a default set on one parser
    # would reset a flag given at another level); fill in the ones not given.
    for name, default in (("root", None), ("json", False), ("verbose", False)):
        if not hasattr(args, name):
            setattr(args, name, default)
    args.exit_when_answered = exit_when_answered
    # Imported past parsing: a usage error or --help (argparse exits) never pays for them.
    import inspect

    import anyio
    import structlog

    from supervisor.logging import configure_logging

    configure_logging(verbose=bool(args.verbose))
    handler = args.handler
    try:
        if inspect.iscoroutinefunction(handler):
            result: Any = anyio.run(handler, args)
        else:
            result = handler(args)
    except RoundtableError as exc:
        emit_error(exc, as_json=args.json)
        return 1
    except KeyboardInterrupt:
        emit_error(InternalError("interrupted"), as_json=args.json)
        return 130
    except Exception as exc:
        structlog.get_logger("roundtable.cli").exception("command.crashed", command=args.command)
        emit_error(
            InternalError(f"unexpected error: {type(exc).__name__}; see the log on stderr"), as_json=args.json
        )
        return 1
    if isinstance(result, dict):
        emit(result, as_json=args.json, render=getattr(args, "render", None))
    return 0
