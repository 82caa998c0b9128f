"""Concepts: general classes of construct a decision can name in words rather than in code.

A :class:`Concept` pairs a *cue* (how decisions talk about it: "personal data", "UTC", "minor
units") with *patterns* (what the offending code looks like, per language). The table itself is
data, in :mod:`roles.providers.judge.lexicon`; this module holds the types and the matching.

A pattern matches an added code line (comments stripped) and may require a second regex on the
same statement (``also``: a logging call *and* a personal-data field), refuse a statement that
neutralises it (``unless``: the value is masked), or refuse one whose neighbouring added lines
show it is harmless (``unless_near``: an ``egress`` rule). A concept may also carry a
``detector`` for what is missing rather than present (a new container with no limits).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from roles.providers.judge.diff import DiffLine, FileChange, code_lines, is_test_path, path_matches

__all__ = [
    "CODE",
    "Concept",
    "Detector",
    "Hit",
    "LazyRegex",
    "Pattern",
    "Statement",
    "cue",
    "inside_string",
    "pattern",
    "statements",
    "without_string_text",
]

CODE = frozenset({"python", "typescript", "go", "rust"})
_GROUPS = {"code": CODE, "yaml": frozenset({"yaml", "ci"}), "any": frozenset()}
_NEAR = 6
_RUST_TESTS = re.compile(r"#\[cfg\(test\)\]|^\s*mod\s+tests\b")
_MAX_JOIN = 8


class LazyRegex:
    """A regex compiled on its first search.

    The concept table holds a few hundred pattern regexes, and compiling them all was most of the
    judge's import, paid by every launch inside its container before the first tool call; a launch
    only searches with the patterns of the concepts its decisions name. :func:`pattern` builds these;
    ``tests/roles/test_judge_lexicon.py`` compiles every one, so a bad regex fails there, not in a launch.
    """

    __slots__ = ("_compiled", "flags", "source")

    def __init__(self, source: str, flags: int = re.IGNORECASE) -> None:
        self.source = source
        self.flags = flags
        self._compiled: re.Pattern[str] | None = None

    @property
    def compiled(self) -> re.Pattern[str]:
        """The compiled regex (compiled now if it is not yet)."""
        if self._compiled is None:
            self._compiled = re.compile(self.source, self.flags)
        return self._compiled

    def search(self, text: str) -> re.Match[str] | None:
        """``re.Pattern.search`` of the compiled regex."""
        return self.compiled.search(text)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, LazyRegex):
            return NotImplemented
        return (self.source, self.flags) == (other.source, other.flags)

    def __hash__(self) -> int:
        return hash((self.source, self.flags))

    def __repr__(self) -> str:
        return f"LazyRegex({self.source!r}, {self.flags!r})"


@dataclass(frozen=True)
class Statement:
    """An added line, its code part, and the statement it starts (continuation lines joined)."""

    line: DiffLine
    code: str
    statement: str
    window: str
    in_test: bool
    language: str


@dataclass(frozen=True)
class Hit:
    """A concept pattern that matched an added statement."""

    statement: Statement
    strength: float
    what: str
    inside_string: bool = False


@dataclass(frozen=True)
class Pattern:
    """What offending code looks like for one concept, in some languages."""

    regex: LazyRegex
    languages: frozenset[str]
    what: str
    strength: float = 0.85
    also: LazyRegex | None = None
    unless: LazyRegex | None = None
    unless_near: LazyRegex | None = None
    paths: tuple[str, ...] = ()
    also_in_code: bool = False
    in_strings: bool = False

    def matches_text(self, text: str) -> bool:
        """Whether one line of text matches on its own (``regex`` and ``also``, not ``unless``)."""
        if not self.regex.search(text):
            return False
        if self.also is not None and not self.also.search(text):
            return False
        return self.unless is None or not self.unless.search(text)

    def hit(self, statement: Statement) -> Hit | None:
        """A :class:`Hit` when ``statement`` matches."""
        if self.languages and statement.language not in self.languages:
            return None
        if self.paths and not path_matches(statement.line.path, self.paths):
            return None
        found = self.regex.search(statement.code)
        if not found:
            return None
        also_text = without_string_text(statement.statement) if self.also_in_code else statement.statement
        if self.also is not None and not self.also.search(also_text):
            return None
        if self.unless is not None and self.unless.search(statement.statement):
            return None
        if self.unless_near is not None and self.unless_near.search(statement.window):
            return None
        mention = (
            not self.in_strings
            and statement.language in CODE
            and inside_string(statement.code, found.start())
        )
        return Hit(statement, self.strength, self.what, mention)


Detector = Callable[[FileChange], list[DiffLine]]


@dataclass(frozen=True)
class Concept:
    """A class of construct: how decisions name it, and what violating code looks like."""

    name: str
    cue: re.Pattern[str]
    patterns: tuple[Pattern, ...]
    anti_cue: re.Pattern[str] | None = None
    detector: Detector | None = None
    detector_what: str = ""
    detector_strength: float = 0.75
    exemptions: tuple[tuple[re.Pattern[str], re.Pattern[str]], ...] = field(default=())
    needs_required_span: bool = False
    """Applies only to a clause naming the construct to use instead ("through `apiClient`")."""

    def exempts(self, clause_text: str, code: str) -> bool:
        """Whether the decision's own wording exempts this line (e.g. "third-party" actions only)."""
        return any(when.search(clause_text) and line.search(code) for when, line in self.exemptions)

    def named_by(self, clause_text: str) -> bool:
        """Whether a decision sentence talks about this concept."""
        if self.anti_cue is not None and self.anti_cue.search(clause_text):
            return False
        return self.cue.search(clause_text) is not None


def pattern(
    regex: str,
    languages: str = "any",
    what: str = "",
    *,
    strength: float = 0.85,
    also: str | None = None,
    unless: str | None = None,
    unless_near: str | None = None,
    paths: tuple[str, ...] = (),
    also_in_code: bool = False,
    in_strings: bool = False,
    flags: int = re.IGNORECASE,
) -> Pattern:
    """Build a :class:`Pattern`; ``languages`` is a space-separated list of families or groups."""
    langs: set[str] = set()
    for name in languages.split():
        langs |= _GROUPS.get(name, frozenset({name}))
    return Pattern(
        regex=LazyRegex(regex, flags),
        languages=frozenset(langs),
        what=what,
        strength=strength,
        also=LazyRegex(also, flags) if also else None,
        unless=LazyRegex(unless, flags) if unless else None,
        unless_near=LazyRegex(unless_near, flags) if unless_near else None,
        paths=paths,
        also_in_code=also_in_code,
        in_strings=in_strings,
    )


def inside_string(code: str, start: int) -> bool:
    """Whether position ``start`` of ``code`` lies in a string literal's text (not an interpolation).

    Interpolations (Python ``f"{x}"``, JavaScript ``${x}``) are code, so a match there counts as a use.
    """
    quote: str | None = None
    formatted = False
    depth = 0
    index = 0
    while index < start:
        char = code[index]
        if quote is None:
            if char in "\"'`":
                quote, depth = char, 0
                formatted = char == "`" or (index > 0 and code[index - 1] in "fF")
        elif depth:
            depth += {"{": 1, "}": -1}.get(char, 0)
        elif char == "\\":
            index += 1
        elif char == quote:
            quote = None
        elif formatted and char == "{" and (quote != "`" or code[index - 1 : index] == "$"):
            depth = 1
        index += 1
    return quote is not None and depth == 0


_STRING = re.compile(r"\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*'|`(?:[^`\\]|\\.)*`")
_INTERPOLATION = re.compile(r"\$?\{[^{}]*\}")


def without_string_text(code: str) -> str:
    """``code`` with the text of its string literals blanked, keeping interpolations (``{user.email}``)."""

    def keep(match: re.Match[str]) -> str:
        return '""' + " ".join(_INTERPOLATION.findall(match.group(0)))

    return _STRING.sub(keep, code)


def _depth(text: str) -> int:
    depth = 0
    quote: str | None = None
    for char in text:
        if quote:
            if char == quote:
                quote = None
        elif char in "\"'`":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
    return depth


def statements(change: FileChange) -> list[Statement]:
    """The added code lines of ``change`` as :class:`Statement` items."""
    lines = code_lines(change)
    in_test = is_test_path(change.path)
    out: list[Statement] = []
    for index, (line, code) in enumerate(lines):
        if change.language == "rust" and _RUST_TESTS.search(code):
            in_test = True  # the rest of the file's added lines are its in-file test module
        joined = [code]
        depth = _depth(code)
        follow = index + 1
        while depth > 0 and follow < len(lines) and len(joined) < _MAX_JOIN:
            nxt_line, nxt_code = lines[follow]
            if nxt_line.number != lines[follow - 1][0].number + 1:
                break
            joined.append(nxt_code)
            depth += _depth(nxt_code)
            follow += 1
        near = [
            c
            for ln, c in lines[max(0, index - _NEAR) : index + _NEAR + 1]
            if abs(ln.number - line.number) <= _NEAR
        ]
        out.append(Statement(line, code, " ".join(joined), "\n".join(near), in_test, change.language))
    return out


def cue(text: str) -> re.Pattern[str]:
    """How decisions talk about a concept: a case-insensitive pattern over a decision's words."""
    return re.compile(text, re.IGNORECASE)
