"""What a decision or constraint says: its sentences, which way each points, and what it names.

:func:`parse_entry` splits an entry (title and body) into :class:`Clause` items. Each clause has a
:class:`Polarity` (a prohibition, an obligation, a preference, a permission or a plain fact), the
code spans it names (backticks, or quoted identifiers) split into forbidden and required ones, the
path globs it is limited to, and whether it exempts tests. Only ``decision`` and ``constraint``
entries govern; notes, summaries and anything else are facts and never produce warnings.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

__all__ = ["GOVERNING_KINDS", "Clause", "Polarity", "Rule", "SpanRole", "parse_entry", "polarity_of"]

GOVERNING_KINDS = frozenset(
    {
        "decision",
        "constraint",
        "rule",
        "policy",
        "requirement",
        "convention",
        "guideline",
        "standard",
        "invariant",
    }
)


class Polarity(StrEnum):
    """Which way a sentence points."""

    PROHIBITION = "prohibition"
    OBLIGATION = "obligation"
    PREFERENCE = "preference"
    PERMISSION = "permission"
    FACT = "fact"


class SpanRole(StrEnum):
    """What a named construct is to its sentence."""

    FORBIDDEN = "forbidden"
    REQUIRED = "required"
    CONTEXT = "context"


@dataclass(frozen=True)
class Span:
    """A construct a sentence names, and its role."""

    text: str
    role: SpanRole


@dataclass(frozen=True)
class Clause:
    """One sentence of an entry, judged on its own."""

    text: str
    polarity: Polarity
    spans: tuple[Span, ...]
    paths: tuple[str, ...]
    quote: str = ""


@dataclass(frozen=True)
class Rule:
    """A governing entry: its clauses plus what applies to all of them."""

    entry_id: str
    kind: str
    title: str
    clauses: tuple[Clause, ...]
    tests_exempt: bool
    languages: tuple[str, ...]

    @property
    def governs(self) -> bool:
        """Whether any clause can be violated."""
        return any(c.polarity in _VIOLABLE for c in self.clauses)


_VIOLABLE = frozenset({Polarity.PROHIBITION, Polarity.OBLIGATION, Polarity.PREFERENCE})
_SPAN = re.compile(r"`([^`\n]{1,120})`")
_QUOTED = re.compile(r"[\"“]([A-Za-z_][\w.:/-]*(?:\(\))?)[\"”]")
_SENTENCE = re.compile(r"(?<=[.!?;])\s+|\n+")
_SUB_CLAUSE = re.compile(r":\s+(?=(?:no|never|not)\b)", re.IGNORECASE)
_PROHIBIT = re.compile(
    r"\b(never|must not|mustn't|shall not|do not|don't|does not|doesn't|cannot|can't|may not|are not|is not|"
    r"not allowed|not permitted|forbidden|prohibited|banned|disallowed|avoid|nothing|nobody|no one|"
    r"should not|shouldn't|refuse|without exception|no longer|stop using|stopped using|moved away from|"
    r"deprecated|refrain from|off-limits|under no circumstances)\b"
    r"|^\s*no\b|(?<=[,:;(])\s*no\b|\bno\s+(?=[`\w])",
    re.IGNORECASE,
)
_PROHIBIT_AFTER = re.compile(
    r"\b(not|never|instead of|rather than|over|in place of|except|unless|avoid|forbidden|banned)\s*$",
    re.IGNORECASE,
)
_OBLIGE = re.compile(
    r"\b(must|always|shall|required|requires?|need to|needs to|has to|have to|only|every|all|each|"
    r"go(?:es)? through|use|uses|are|is|stay|stays|carry|carries|declare|declares|hold|holds)\b",
    re.IGNORECASE,
)
_PREFER = re.compile(r"\b(prefer|preferably|should|ideally|recommended|where possible|try to)\b", re.I)
_PERMIT = re.compile(
    r"\b(may|is allowed|are allowed|can|is acceptable|are acceptable|is fine|is ok|permitted|optional)\b",
    re.I,
)
_NEGATED_PERMIT = re.compile(r"\b(may not|cannot|can't|not allowed|not permitted|nothing\b.*\bmay)\b", re.I)
_PATH = re.compile(r"\b(?:in|under|within|inside|below)\s+`?((?:[\w.*-]+/)+[\w.*-]*|\*\.\w+)`?", re.I)
_TESTS_EXEMPT = re.compile(
    r"\b(outside (of )?tests?|non-test|tests? (code )?(may|can|are exempt)|except (in )?tests?"
    r"|production code)\b",
    re.I,
)
_LANGUAGES = (
    ("python", re.compile(r"\bpython\b", re.I)),
    ("go", re.compile(r"\b(golang|Go (code|services?|packages?|modules?))\b|\bin Go\b")),
    ("rust", re.compile(r"\brust\b|\bcrates?\b", re.I)),
    ("typescript", re.compile(r"\b(typescript|javascript|react|front[- ]end|browser|node(\.js)?)\b", re.I)),
)


def polarity_of(sentence: str) -> Polarity:
    """The polarity of one sentence (code spans should already be masked out)."""
    if _PROHIBIT.search(sentence) or _NEGATED_PERMIT.search(sentence):
        return Polarity.PROHIBITION
    if _PREFER.search(sentence):
        return Polarity.PREFERENCE
    if _PERMIT.search(sentence):
        return Polarity.PERMISSION
    if _OBLIGE.search(sentence):
        return Polarity.OBLIGATION
    return Polarity.FACT


def _split(text: str, splitter: re.Pattern[str] = _SENTENCE) -> list[str]:
    # Protect code spans (they may hold ".", ";" or ":") while splitting into sentences.
    spans: list[str] = []

    def keep(match: re.Match[str]) -> str:
        spans.append(match.group(0))
        return f"\x00{len(spans) - 1}\x00"

    masked = _SPAN.sub(keep, text)
    parts = [p for p in splitter.split(masked) if p and p.strip()]
    return [re.sub(r"\x00(\d+)\x00", lambda m: spans[int(m.group(1))], p).strip() for p in parts]


def _clauses(text: str) -> list[tuple[str, str]]:
    """(clause, the whole sentence it belongs to): "Never X: no `y`" judges "no `y`" on its own."""
    out: list[tuple[str, str]] = []
    for sentence in _split(text):
        out.extend((piece, sentence) for piece in _split(sentence, _SUB_CLAUSE))
    return out


_VERB_OF_OBJECT = re.compile(
    r"^\s+(the\s+|any\s+|a\s+)?(secrets?|tokens?|passwords?|credentials?|keys?|personal data|pii|e-?mails?|"
    r"user data|customer data)\b",
    re.IGNORECASE,
)
_REQUIRED_AFTER_CUE = re.compile(
    r"(,|;|\bbut|\band)\s+(use|call|prefer|go through|pass)\b[^,;]*$|\binstead\b|\b(via|through)\s*$", re.I
)
_BANNED_AFTER = re.compile(
    r"^\W*(\w+\s+){0,3}?(is|are|must|may|should)\s+(not\s+be\s+used|never\s+be\s+used|banned|forbidden|"
    r"prohibited|disallowed|deprecated|off-limits|not (permitted|allowed))\b",
    re.I,
)


def _role(before: str, after: str, polarity: Polarity, cue_at: int | None) -> SpanRole:
    """Whether a span is what the sentence rules out, what it asks for, or mere context."""
    if _PROHIBIT_AFTER.search(before):
        return SpanRole.FORBIDDEN  # "not `x`", "instead of `x`", "rather than `x`"
    if polarity is Polarity.PROHIBITION:
        if cue_at is not None and len(before) >= cue_at:
            return SpanRole.REQUIRED if _REQUIRED_AFTER_CUE.search(before[cue_at:]) else SpanRole.FORBIDDEN
        return SpanRole.FORBIDDEN if _BANNED_AFTER.search(after) else SpanRole.CONTEXT
    if polarity in (Polarity.OBLIGATION, Polarity.PREFERENCE):
        return SpanRole.REQUIRED
    return SpanRole.CONTEXT


def _spans(sentence: str, polarity: Polarity) -> tuple[Span, ...]:
    found: list[Span] = []
    cue = _PROHIBIT.search(_SPAN.sub("CODE", sentence))
    cue_at = cue.start() if cue else None
    pieces = list(_SPAN.finditer(sentence)) or list(_QUOTED.finditer(sentence))
    for match in pieces:
        before = _SPAN.sub("CODE", sentence[: match.start()])
        role = _role(before, sentence[match.end() :], polarity, cue_at)
        if role is SpanRole.FORBIDDEN and _VERB_OF_OBJECT.match(sentence[match.end() :]):
            role = SpanRole.CONTEXT  # "never `echo` secrets": the object, not the command, is the point
        if (
            role is SpanRole.FORBIDDEN
            and len(pieces) == 1
            and re.search(r"\b(strings?|values?|input)\s+(to|into)\s*$", before)
        ):
            role = (
                SpanRole.CONTEXT
            )  # "do not pass f-strings to `cursor.execute`": the call is where, not what
        found.append(Span(match.group(1).strip(), role))
    return tuple(found)


def parse_entry(entry: dict[str, object]) -> Rule:
    """Parse a memory entry (the tools' projection: ``id``, ``kind``, ``title``, ``body_md``)."""
    kind = str(entry.get("kind", "")).lower()
    title = str(entry.get("title", ""))
    body = str(entry.get("body_md", ""))
    text = (
        f"{title}.\n{body}" if title and not title.rstrip().endswith((".", "!", "?")) else f"{title}\n{body}"
    )
    clauses = []
    for sentence, quote in _clauses(text):
        masked = _SPAN.sub("CODE", sentence)
        polarity = polarity_of(masked) if kind in GOVERNING_KINDS else Polarity.FACT
        if polarity is Polarity.FACT and kind in GOVERNING_KINDS:
            polarity = Polarity.OBLIGATION  # a decision's plain statement is what the project holds to
        spans = _spans(sentence, polarity)
        if polarity is Polarity.OBLIGATION and any(s.role is SpanRole.FORBIDDEN for s in spans):
            polarity = Polarity.PROHIBITION  # "use `a`, not `b`"
        paths = tuple(m.group(1) for m in _PATH.finditer(sentence))
        clauses.append(Clause(sentence, polarity, spans, paths, quote))
    languages = tuple(name for name, pattern in _LANGUAGES if pattern.search(text))
    return Rule(
        entry_id=str(entry.get("id", "")),
        kind=kind,
        title=title,
        clauses=tuple(clauses),
        tests_exempt=bool(_TESTS_EXEMPT.search(text)),
        languages=languages,
    )
