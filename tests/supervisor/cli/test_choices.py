"""Lazy option choices: loaded when a value is checked or help is printed, never to build the parser."""

from __future__ import annotations

import argparse
from typing import NoReturn

import pytest

from supervisor.cli._choices import LazyChoices, add_lazy_choice


class _Loader:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self) -> list[str]:
        self.calls += 1
        return ["judge", "lexical"]


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise ValueError(message)


def _parser(load: _Loader) -> argparse.ArgumentParser:
    parser = _Parser(prog="x")
    sub = parser.add_subparsers(dest="command", parser_class=_Parser)
    other = sub.add_parser("other")
    other.add_argument("--flag", action="store_true")
    launch = sub.add_parser("launch")
    add_lazy_choice(launch, "--provider", load=load, help="the provider")
    return parser


def test_building_the_parser_and_parsing_other_commands_load_nothing() -> None:
    load = _Loader()
    parser = _parser(load)
    assert parser.parse_args(["other", "--flag"]).flag is True
    assert parser.parse_args(["launch"]).provider is None
    assert parser.format_help()  # the top-level help lists commands, not their options
    assert load.calls == 0


def test_a_value_is_checked_against_the_loaded_choices_once() -> None:
    load = _Loader()
    parser = _parser(load)
    assert parser.parse_args(["launch", "--provider", "lexical"]).provider == "lexical"
    with pytest.raises(ValueError, match=r"invalid choice: 'openai' \(choose from 'judge', 'lexical'\)"):
        parser.parse_args(["launch", "--provider", "openai"])
    assert load.calls == 1


def test_help_shows_the_choices_as_a_plain_list_does() -> None:
    lazy = argparse.ArgumentParser(prog="x")
    add_lazy_choice(lazy, "--provider", load=_Loader(), help="the provider")
    plain = argparse.ArgumentParser(prog="x")
    plain.add_argument("--provider", choices=["judge", "lexical"], help="the provider")
    assert lazy.format_help() == plain.format_help()
    assert "{judge,lexical}" in lazy.format_usage()


def test_lazy_choices_is_a_sequence() -> None:
    choices = LazyChoices(lambda: iter(["a", "b"]))
    assert repr(choices) == "LazyChoices(...)"
    assert list(choices) == ["a", "b"] and choices[1] == "b" and list(choices[:1]) == ["a"]
    assert "a" in choices and "c" not in choices and len(choices) == 2
    assert repr(choices) == "LazyChoices(['a', 'b'])"
