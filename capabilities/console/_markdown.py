"""Markdown written by agents and maintainers (warnings, vote reasons, memory bodies) as safe HTML.

Two layers, each enough on its own:

1. ``markdown-it-py`` parses CommonMark (plus tables and strikethrough) with raw HTML off, so
   ``<script>`` or ``<img onerror=...>`` in the text stays text; a link or image whose URL is not
   ``http``, ``https``, ``mailto`` or relative (``javascript:``, ``data:``, ``vbscript:``,
   ``file:``...) is not made a link at all. An image becomes a link to it, labelled with its
   alternative text: the console loads no image a text names.
2. ``nh3`` (the ammonia sanitiser) then keeps only an allow-list of tags and attributes: no
   ``style``, no ``class``, no event handler, ``href`` only with those schemes, and every link
   ``rel="nofollow noopener noreferrer"``.

The page's Content-Security-Policy stays as strict as before: nothing here needs inline script or
style (table column alignment, which markdown-it writes as ``style``, is dropped).

Headings are shifted so that a body's ``# Title`` never competes with the page's own ``h1``
and ``h2``: ``heading`` is the level a Markdown ``#`` becomes.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from typing import Any

import nh3
from markdown_it import MarkdownIt
from markdown_it.renderer import RendererHTML
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict

from capabilities.console._html import Markup

__all__ = ["SAFE_SCHEMES", "render_markdown", "render_markdown_inline"]

SAFE_SCHEMES = frozenset({"http", "https", "mailto"})
"""The URL schemes a rendered link may use (relative URLs and fragments are always allowed)."""

_SCHEME = re.compile(r"([a-z][a-z0-9+.\-]*):", re.IGNORECASE)
_TAGS = {
    "p", "br", "hr", "h3", "h4", "h5", "h6", "strong", "em", "del", "s", "code", "pre",
    "blockquote", "ul", "ol", "li", "a", "table", "thead", "tbody", "tr", "th", "td",
}  # fmt: skip
_ATTRIBUTES = {"a": {"href", "title"}, "ol": {"start"}}
_DROPPED_WITH_CONTENT = {"script", "style"}


def _safe_link(url: str) -> bool:
    """Whether markdown-it may make ``url`` a link: a safe scheme, or none (relative)."""
    found = _SCHEME.match(url.strip())
    return found is None or found.group(1).lower() in SAFE_SCHEMES


def _image_as_link(
    self: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType
) -> str:
    """``![alt](src)`` as a link to ``src`` labelled ``alt``: the console shows no foreign images."""
    token = tokens[idx]
    label = self.renderInlineAsText(token.children or [], options, env) or "image"
    src = html.escape(str(token.attrGet("src") or ""), quote=True)
    return f'<a href="{src}">{html.escape(label)}</a>'


def _parser() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False}).enable(["table", "strikethrough"])
    md.validateLink = _safe_link  # type: ignore[method-assign]
    md.add_render_rule("image", _image_as_link)
    return md


_MD = _parser()


def _clean(rendered: str) -> Markup:
    return Markup(
        nh3.clean(
            rendered,
            tags=_TAGS,
            clean_content_tags=_DROPPED_WITH_CONTENT,
            attributes=_ATTRIBUTES,
            url_schemes=set(SAFE_SCHEMES),
            link_rel="nofollow noopener noreferrer",
            strip_comments=True,
        ).strip()
    )


def _shift_headings(tokens: list[Token], heading: int) -> None:
    for token in tokens:
        if token.type in ("heading_open", "heading_close"):
            token.tag = f"h{min(6, int(token.tag[1]) + heading - 1)}"


def render_markdown(text: Any, *, heading: int = 3) -> Markup:
    """``text`` (Markdown) as sanitised block HTML; a Markdown ``#`` becomes ``h<heading>``."""
    if text is None or str(text).strip() == "":
        return Markup("")
    env: dict[str, Any] = {}
    tokens = _MD.parse(str(text), env)
    _shift_headings(tokens, max(3, min(6, heading)))
    return _clean(_MD.renderer.render(tokens, _MD.options, env))


def render_markdown_inline(text: Any) -> Markup:
    """``text`` as one line of sanitised inline HTML (emphasis, code, links; line breaks as spaces)."""
    if text is None:
        return Markup("")
    return _clean(_MD.renderInline(" ".join(str(text).split())))
