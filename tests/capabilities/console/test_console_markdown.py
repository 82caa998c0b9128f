"""The console's Markdown renderer: a safe subset rendered, every kind of injection inert."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest

from capabilities.console._html import Markup
from capabilities.console._markdown import SAFE_SCHEMES, _clean, render_markdown, render_markdown_inline

_REL = 'rel="nofollow noopener noreferrer"'


class _Elements(HTMLParser):
    """Every start tag of a fragment with its attributes."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found.append((tag, dict(attrs)))


def elements(fragment: str) -> list[tuple[str, dict[str, str | None]]]:
    parser = _Elements()
    parser.feed(fragment)
    parser.close()
    return parser.found


def assert_inert(fragment: str) -> None:
    """No script, no image, no handler, no style, and only safe (or relative) link targets."""
    for tag, attrs in elements(fragment):
        assert tag not in ("script", "img", "iframe", "object", "embed", "style", "svg", "form"), fragment
        for name, value in attrs.items():
            assert not name.startswith("on"), fragment
            assert name not in ("style", "class", "src", "srcdoc"), fragment
            if name == "href":
                target = (value or "").strip().lower()
                scheme = target.split(":", 1)[0] if ":" in target.split("/", 1)[0] else ""
                assert scheme in ("", *SAFE_SCHEMES), fragment
                assert attrs.get("rel") == "nofollow noopener noreferrer", fragment


def test_the_safe_subset_is_rendered() -> None:
    text = (
        "# Heading\n\n**Check against** the *decision*: `verify=False` is ~~fine~~ banned.\n\n"
        "- one\n- two\n\n1. first\n\n> quoted\n\n```\nx = 1 < 2\n```\n\n"
        "| a | b |\n|---|--:|\n| 1 | 2 |\n\n"
        "[docs](https://example.org/d) [entry](/memories/M-1) [mail](mailto:a@example.org)"
    )
    out = render_markdown(text)
    assert isinstance(out, Markup)
    assert "<h3>Heading</h3>" in out  # a Markdown # never competes with the page's h1 or h2
    assert "<strong>Check against</strong>" in out and "<em>decision</em>" in out
    assert "<code>verify=False</code>" in out and "<s>fine</s>" in out
    assert "<ul>\n<li>one</li>\n<li>two</li>\n</ul>" in out and "<ol>\n<li>first</li>\n</ol>" in out
    assert "<blockquote>\n<p>quoted</p>\n</blockquote>" in out
    assert "<pre><code>x = 1 &lt; 2\n</code></pre>" in out
    assert "<th>a</th>" in out and "<td>2</td>" in out and "style" not in out  # alignment dropped
    rel = 'rel="nofollow noopener noreferrer"'
    assert f'<a href="https://example.org/d" {rel}>docs</a>' in out
    assert f'<a href="/memories/M-1" {rel}>entry</a>' in out
    assert f'<a href="mailto:a@example.org" {rel}>mail</a>' in out
    assert "**" not in out
    assert_inert(out)


@pytest.mark.parametrize(("level", "tag"), [(3, "h3"), (5, "h5"), (6, "h6")])
def test_headings_start_at_the_level_asked_and_stop_at_h6(level: int, tag: str) -> None:
    out = render_markdown("# one\n\n###### six", heading=level)
    assert out.startswith(f"<{tag}>one</{tag}>")
    assert "<h6>six</h6>" in out and "<h1" not in out and "<h2" not in out


@pytest.mark.parametrize(
    "text",
    [
        "<script>alert(1)</script>",
        "<img src=x onerror=alert(1)>",
        '<a href="javascript:alert(1)">x</a>',
        "<div style=\"position:fixed\" onclick='alert(1)'>x</div>",
        "<iframe src=//evil.example></iframe>",
        "<svg onload=alert(1)>",
        "[click](javascript:alert(1))",
        "[click](JaVaScRiPt:alert(1))",
        "[click]( javascript:alert(1) )",
        "[click](vbscript:msgbox(1))",
        "[click](file:///etc/passwd)",
        "[click](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
        "![pixel](data:image/png;base64,iVBORw0KGgo=)",
        "![pixel](https://tracker.example/p.gif)",
        "![x](javascript:alert(1))",
        '[x](https://example.org "title\\" onmouseover=\\"alert(1)")',
        '<http://example.org/" onclick="alert(1)>',
        "`<script>`",
    ],
)
def test_injections_stay_inert(text: str) -> None:
    for out in (render_markdown(text), render_markdown_inline(text)):
        assert_inert(out)
        assert "<script" not in out and "<img" not in out and "<iframe" not in out and "<svg" not in out


def test_raw_html_is_shown_as_text() -> None:
    out = render_markdown('<script>alert("x")</script> and <b onclick="x()">bold</b>')
    assert out == ('<p>&lt;script&gt;alert("x")&lt;/script&gt; and &lt;b onclick="x()"&gt;bold&lt;/b&gt;</p>')


def test_unsafe_links_are_left_as_text_and_images_become_links() -> None:
    assert render_markdown("[a](javascript:alert(1))") == "<p>[a](javascript:alert(1))</p>"
    assert render_markdown("[a](data:text/html,x)") == "<p>[a](data:text/html,x)</p>"
    assert render_markdown("![logo](https://example.org/l.png)") == (
        '<p><a href="https://example.org/l.png" rel="nofollow noopener noreferrer">logo</a></p>'
    )


def test_the_sanitiser_alone_stops_what_the_parser_would_let_through() -> None:
    """Defence in depth: hostile HTML handed straight to the second layer comes out inert."""
    hostile = (
        '<p onclick="alert(1)" style="color:red" class="x">t</p><script>alert(1)</script>'
        '<img src=x onerror=alert(1)><a href="javascript:alert(1)">j</a>'
        '<a href="data:text/html,x">d</a><a href="https://example.org" target="_blank">ok</a>'
        "<h1>big</h1><!-- note --><style>body{}</style>"
    )
    out = _clean(hostile)
    assert out == (f'<p>t</p><a {_REL}>j</a><a {_REL}>d</a><a href="https://example.org" {_REL}>ok</a>big')
    assert_inert(out)


def test_inline_rendering_is_one_line() -> None:
    out = render_markdown_inline("**Check against**\nthe `decision`\n\n- not a list")
    assert out == "<strong>Check against</strong> the <code>decision</code> - not a list"
    assert render_markdown_inline(None) == "" and render_markdown("  \n") == ""
