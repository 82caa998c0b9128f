"""A tiny escaping template helper for the console (no template engine, no build step).

:func:`html` fills a :class:`string.Template` (``$name`` placeholders) and HTML-escapes every
value unless it is :class:`Markup` (already-built HTML from this module). Nothing a user, an agent
or a memory entry wrote can reach the page unescaped: escaping is the default, opting out needs a
``Markup`` object, and only this package creates those.
"""

from __future__ import annotations

import html as _html
from collections.abc import Iterable
from functools import cache
from importlib import resources
from string import Template
from typing import Any
from urllib.parse import urlencode

__all__ = ["Markup", "attr_url", "esc", "html", "join", "page_template", "when"]


class Markup(str):
    """A string of HTML that is safe to insert as is."""

    __slots__ = ()


def esc(value: Any) -> Markup:
    """``value`` as HTML text (``Markup`` passes through unchanged)."""
    if isinstance(value, Markup):
        return value
    return Markup(_html.escape("" if value is None else str(value), quote=True))


def html(template: str, **values: Any) -> Markup:
    """Fill ``template`` (``$name`` placeholders) with escaped ``values``."""
    return Markup(Template(template).substitute({key: esc(value) for key, value in values.items()}))


def join(parts: Iterable[Markup], separator: str = "") -> Markup:
    """Concatenate pieces of markup."""
    return Markup(separator.join(esc(part) for part in parts))


def when(stamp: Any) -> Markup:
    """A stored UTC timestamp as ``<time>``: ``2026-12-01 13:56:51`` shown, as the terminal's
    timeline prints it, and the full value (microseconds, ``Z``) in ``datetime`` and ``title``."""
    full = "" if stamp is None else str(stamp)
    shown = full.replace("T", " ", 1)[:19] if len(full) >= 19 and full[10:11] == "T" else full
    return html('<time datetime="$full" title="$full">$shown</time>', full=full, shown=shown)


def attr_url(path: str, **query: Any) -> str:
    """A same-site URL with an encoded query (pass it through :func:`html` like any value)."""
    pairs = {key: value for key, value in query.items() if value not in (None, "")}
    return path + ("?" + urlencode(pairs) if pairs else "")


@cache
def page_template(name: str) -> str:
    """A template file shipped in ``capabilities/console/templates``."""
    return (resources.files("capabilities.console") / "templates" / name).read_text(encoding="utf-8")
