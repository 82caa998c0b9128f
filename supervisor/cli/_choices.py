"""Option choices that live in heavy modules, read only when argparse needs them.

Three options list values defined far from the CLI: ``oracle launch --provider`` (the store's
configuration, so pydantic), ``oracle feedback --verdict`` (the store's feedback module, so the
whole store) and ``capability grant --role`` (the tool policy). :func:`add_lazy_choice` gives such
an option a :class:`LazyChoices` that loads on first use: when a value given for it is checked, or
when its command's help is printed. Building the whole parser, as every command does, then imports
none of them.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable, Sequence
from typing import Any, overload

__all__ = ["LazyChoices", "add_lazy_choice"]


class LazyChoices(Sequence[str]):
    """The strings ``load()`` returns, loaded on first use and kept."""

    def __init__(self, load: Callable[[], Iterable[str]]) -> None:
        self._load = load
        self._values: list[str] | None = None

    def _loaded(self) -> list[str]:
        if self._values is None:
            self._values = [str(value) for value in self._load()]
        return self._values

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[str]: ...

    def __getitem__(self, index: int | slice) -> str | Sequence[str]:
        return self._loaded()[index]

    def __len__(self) -> int:
        return len(self._loaded())

    def __repr__(self) -> str:
        return f"LazyChoices({self._values if self._values is not None else '...'})"


def add_lazy_choice(
    parser: argparse.ArgumentParser, *flags: str, load: Callable[[], Iterable[str]], **kwargs: Any
) -> argparse.Action:
    """``parser.add_argument(*flags, choices=..., **kwargs)`` with the choices ``load()`` returns,
    loaded only when argparse uses them.

    ``add_argument`` formats a new option's metavar once, as a check, and with no metavar that
    lists the choices; the option is added with a placeholder metavar, which is then removed so that
    its help shows ``{a,b,c}`` as for a plain list.
    """
    action = parser.add_argument(*flags, choices=LazyChoices(load), metavar="CHOICE", **kwargs)
    action.metavar = None
    return action
