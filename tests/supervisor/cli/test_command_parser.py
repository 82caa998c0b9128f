"""A command line naming a command is parsed by a parser of that command's module alone, with the
same result as the full parser: the same arguments, the same usage errors, the same help."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io

import pytest

from supervisor.cli._main import (
    _common_options,
    _Parser,
    _UsageError,
    asks_top_help,
    build_parser,
    command_word,
    summary_parser,
)
from supervisor.cli.commands import COMMANDS, SUMMARIES, LazyRenderer, command_modules


def _registered(module_name: str) -> tuple[str, ...]:
    parser = _Parser(prog="roundtable")
    commands = parser.add_subparsers(dest="command", parser_class=_Parser)
    importlib.import_module(f"supervisor.cli.commands.{module_name}").register(commands, _common_options())
    return tuple(commands.choices)


def test_the_table_names_exactly_the_commands_each_module_registers() -> None:
    for module, commands in COMMANDS.items():
        assert _registered(module) == commands, module
    full = build_parser()
    (action,) = [a for a in full._actions if isinstance(a, argparse._SubParsersAction)]
    assert tuple(action.choices) == tuple(c for commands in COMMANDS.values() for c in commands)
    assert [m.__name__ for m in command_modules("no-such")] == [m.__name__ for m in command_modules()]


@pytest.mark.parametrize(
    ("argv", "word"),
    [
        (["oracle", "launch", "P", "--wait"], "oracle"),
        (["--json", "-v", "--root", "oracle", "task", "list"], "task"),
        (["--root=x", "--verbose", "gc"], "gc"),
        (["--ro", "x", "task", "list"], None),  # an abbreviation: the full parser reads it
        (["--root"], None),
        (["--help"], None),
        ([], None),
    ],
)
def test_the_command_word(argv: list[str], word: str | None) -> None:
    assert command_word(argv) == word


def _outcome(parser: argparse.ArgumentParser, argv: list[str]) -> tuple[str, object]:
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            args = parser.parse_args(argv)
    except _UsageError as exc:
        return "usage", str(exc)
    except SystemExit as exc:
        return "exit", (exc.code, out.getvalue())
    return "args", vars(args)


@pytest.mark.parametrize(
    "argv",
    [
        ["oracle", "launch", "P", "--wait", "--json"],
        ["--root", "/tmp/x", "oracle", "launch", "P", "--timeout", "5", "--wait"],
        ["oracle", "launch", "--timeout", "soon", "P"],
        ["oracle"],
        ["oracle", "bogus"],
        ["oracle", "--help"],
        ["oracle", "launch", "--help"],
        ["task", "list", "--json"],
        ["task", "create", "--title", "T", "--priority", "urgent-ish"],
        ["memory", "query", "x", "--limit", "3"],
        ["proposal", "--help"],
        ["init", "--root", "here"],
        ["serve", "--nonsense"],
        ["gc", "-v"],
    ],
)
def test_a_command_parses_as_the_full_parser_parses_it(argv: list[str]) -> None:
    word = command_word(argv)
    assert word is not None
    assert _outcome(build_parser(word), argv) == _outcome(build_parser(), argv)


def test_the_top_level_help_is_the_full_parsers_word_for_word() -> None:
    """``roundtable --help`` is built from SUMMARIES alone: every command, in order, with the line
    its module's parser carries, so the two helps are one text."""
    assert tuple(SUMMARIES) == tuple(c for commands in COMMANDS.values() for c in commands)
    assert summary_parser().format_help() == build_parser().format_help()
    assert summary_parser().format_usage() == build_parser().format_usage()
    assert _outcome(summary_parser(), ["--help"]) == _outcome(build_parser(), ["--help"])


@pytest.mark.parametrize(
    ("argv", "asks"),
    [
        (["--help"], True),
        (["-h"], True),
        (["--json", "--root", "x", "-v", "--help"], True),
        (["--root=x", "-h"], True),
        ([], False),
        (["--json"], False),
        (["task", "--help"], False),
        (["--help", "task"], False),  # the full parser answers it (with the same top-level help)
        (["--root"], False),
        (["--ro", "x", "--help"], False),  # an abbreviation: the full parser reads it
    ],
)
def test_what_asks_for_the_top_level_help(argv: list[str], asks: bool) -> None:
    assert asks_top_help(argv) is asks


def _parsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    found = [parser]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):
                found += _parsers(sub)
    return found


def test_every_lazy_renderer_names_a_renderer() -> None:
    """Renderers are imported when an answer is rendered: a misspelt one would fail only then, so
    each is resolved here."""
    lazy = [p._defaults["render"] for p in _parsers(build_parser()) if "render" in p._defaults]
    named = [r for r in lazy if isinstance(r, LazyRenderer)]
    assert len(named) >= 20
    for renderer in named:
        assert callable(renderer.resolve()), (renderer.module, renderer.name)
    task = {"id": "t1", "title": "T", "status": "open", "priority": "normal", "risk": "low"}
    assert LazyRenderer("_render", "render_task")({"task": task}).startswith("task t1 'T' created")
    with pytest.raises(AttributeError):
        LazyRenderer("_render", "render_no_such_thing").resolve()
