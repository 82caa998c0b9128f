"""The judgment: does this patch's added code go against this rule, and how sure is that?

For each violable clause of a :class:`Rule` (a prohibition, an obligation or a preference), the
judge looks at the code the patch ADDS (comments and docs skipped, files outside the clause's
paths or languages skipped) for three kinds of evidence:

- a FORBIDDEN code span the clause names, found in added code (strongest);
- a REQUIRED multi-word span whose head appears without it ("use `npm ci`": a line running
  ``npm install``);
- a concept the clause names in words whose offending pattern matches (``datetime.now()`` against
  "timestamps are UTC").

Evidence is discounted when it sits in a test file, only inside a string literal, or was already
there (the patch removes as many matching lines from the file as it adds). The confidence of a
finding is its best evidence, nudged up by further lines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from roles.providers.judge.concepts import CODE, Concept, Hit, Pattern, Statement, inside_string, statements
from roles.providers.judge.diff import (
    MAX_CODE_LINE,
    FileChange,
    ParsedDiff,
    code_part,
    is_doc_path,
    path_matches,
)
from roles.providers.judge.lexicon import CONCEPTS
from roles.providers.judge.polarity import Clause, Polarity, Rule, SpanRole

__all__ = ["DiffIndex", "Evidence", "Finding", "assess", "span_regex"]

_POLARITY_WEIGHT = {Polarity.PROHIBITION: 1.0, Polarity.OBLIGATION: 0.95, Polarity.PREFERENCE: 0.8}
_IN_TEST = 0.5
_IN_STRING = 0.6
_KEPT = 0.55
_FALSY = re.compile(r"^\s*[:=]\s*[\"']?(false|0|nil|none|off|no|disabled)\b", re.IGNORECASE)
_PATHLIKE = re.compile(r"\*?\.\w+|[\w.*-]+/[\w./*-]*")


@dataclass(frozen=True)
class Evidence:
    """One added line that goes against one clause."""

    statement: Statement
    clause: Clause
    confidence: float
    reason: str


@dataclass(frozen=True)
class Finding:
    """A rule the patch appears to violate: its confidence and the lines it rests on."""

    rule: Rule
    confidence: float
    evidence: tuple[Evidence, ...]


@lru_cache(maxsize=4096)
def span_regex(span: str, *, loose_call: bool = True, ignore_case: bool = False) -> re.Pattern[str] | None:
    """A regex finding code span ``span`` in a line, or None when the span is too vague to look for."""
    text = span.strip()
    if len(text.strip("()._*")) < 3 or _PATHLIKE.fullmatch(text):
        return None
    tag = re.fullmatch(r"<\s*([A-Za-z][\w.-]*)\s*/?>", text)
    if tag:  # `<img>` names the element, whatever its attributes
        return re.compile(rf"<{re.escape(tag.group(1))}(?![\w.-])", re.IGNORECASE if ignore_case else 0)
    if text.endswith("()") and loose_call:
        text = text[:-2] + "("
    parts: list[str] = []
    for piece in re.findall(r"\.\*|\.\.\.|\w+|\s+|.", text):
        if piece in (".*", "..."):
            parts.append(r"[\w.\s]*" if piece == ".*" else ".*?")
        elif piece.isspace():
            parts.append(r"\s+")
        else:
            if parts and not parts[-1].endswith((r"\s+", r"\s*")):
                parts.append(r"\s*")
            parts.append(re.escape(piece))
    body = "".join(parts).replace(r"\s*\s+", r"\s+")
    prefix = r"(?<![\w$])" if re.match(r"\w", text) else ""
    suffix = r"(?![\w$])" if re.search(r"\w$", text) else ""
    flags = re.IGNORECASE if ignore_case else 0
    return re.compile(prefix + body + suffix, flags)


def _in_scope(rule: Rule, clause: Clause, change: FileChange) -> bool:
    if is_doc_path(change.path):
        return False
    paths = clause.paths or tuple(p for c in rule.clauses for p in c.paths)
    if paths and not path_matches(change.path, paths):
        return False
    return not (rule.languages and change.language in CODE and change.language not in rule.languages)


class DiffIndex:
    """What every rule asks of one diff, computed once: statements, pattern hits, removed matches."""

    def __init__(self, diff: ParsedDiff):
        self.diff = diff
        self._statements: dict[FileChange, list[Statement]] = {}
        self._hits: dict[tuple[int, FileChange], list[tuple[Statement, Hit]]] = {}
        self._removed: dict[tuple[FileChange, object], int] = {}

    def statements(self, change: FileChange) -> list[Statement]:
        """The added statements of ``change``."""
        if change not in self._statements:
            self._statements[change] = statements(change)
        return self._statements[change]

    def hits(self, pattern: Pattern, change: FileChange) -> list[tuple[Statement, Hit]]:
        """Where ``pattern`` matches the added statements of ``change``."""
        key = (id(pattern), change)  # patterns are module constants: their identity is stable
        if key not in self._hits:
            self._hits[key] = [(st, h) for st in self.statements(change) if (h := pattern.hit(st))]
        return self._hits[key]

    def removed(self, change: FileChange, key: re.Pattern[str] | Pattern) -> int:
        """How many removed code lines of ``change`` match ``key`` (a regex, or a concept pattern)."""
        slot = (change, id(key) if isinstance(key, Pattern) else (key.pattern, key.flags))
        if slot not in self._removed:
            matches = key.matches_text if isinstance(key, Pattern) else key.search
            lines = (code_part(line.text[:MAX_CODE_LINE], change.language) for line in change.removed)
            self._removed[slot] = sum(1 for code in lines if code and matches(code))
        return self._removed[slot]


def _discount(
    index: DiffIndex,
    rule: Rule,
    stmt: Statement,
    change: FileChange,
    key: re.Pattern[str] | Pattern,
    added: int,
) -> float:
    factor = 1.0
    if stmt.in_test:
        factor *= 0 if rule.tests_exempt else _IN_TEST
    if index.removed(change, key) >= added:
        factor *= _KEPT
    return factor


def _span_evidence(
    index: DiffIndex, rule: Rule, clause: Clause, change: FileChange, stmts: list[Statement]
) -> list[Evidence]:
    found: list[Evidence] = []
    spans = [s for s in clause.spans if s.role is SpanRole.FORBIDDEN]
    for span in spans:
        siblings = [s.text for s in clause.spans if s is not span]
        loose = not any(s.startswith(span.text[:-2]) for s in siblings) if span.text.endswith("()") else True
        regex = span_regex(span.text, loose_call=loose, ignore_case=change.language == "sql")
        if regex is None:
            continue
        hits = [(st, m) for st in stmts if (m := regex.search(st.code))]
        for stmt, match in hits:
            if re.fullmatch(r"[\w.]+", span.text) and _FALSY.match(stmt.code[match.end() :]):
                continue  # "`InsecureSkipVerify`" named, the line sets it to false
            confidence = 0.95 if len(span.text) >= 6 or not span.text.isalnum() else 0.88
            if stmt.language in CODE and '"' not in span.text and inside_string(stmt.code, match.start()):
                confidence *= _IN_STRING
            confidence *= _discount(index, rule, stmt, change, regex, len(hits))
            found.append(Evidence(stmt, clause, confidence, f"adds `{span.text}`, which it rules out"))
    return found


def _required_head_evidence(
    index: DiffIndex, rule: Rule, clause: Clause, change: FileChange, stmts: list[Statement]
) -> list[Evidence]:
    found: list[Evidence] = []
    for span in clause.spans:
        words = span.text.split()
        if span.role is not SpanRole.REQUIRED or len(words) < 2:
            continue
        nocase = change.language == "sql"
        full = span_regex(span.text, ignore_case=nocase)
        bare_head = span_regex(" ".join(words[:-1]), ignore_case=nocase)
        if full is None or bare_head is None:
            continue
        head = re.compile(
            bare_head.pattern + r"\s+[\w-]", bare_head.flags
        )  # used as a command: `npm install`
        for stmt in stmts:
            if head.search(stmt.code) and not full.search(stmt.statement):
                confidence = 0.75 * _discount(index, rule, stmt, change, head, 1)
                found.append(
                    Evidence(
                        stmt,
                        clause,
                        confidence,
                        f"uses `{' '.join(words[:-1])}` without `{span.text}`, which it requires",
                    )
                )
    return found


_SUBJECT = re.compile(r"(?<![\w`/.])([A-Za-z][\w]*(?:[-.][A-Za-z][\w]*)+)(?![\w`/])")
_NOT_SUBJECT = re.compile(r"(e\.g|i\.e|etc|vs)|.*\.(ya?ml|json|toml|md|txt|sql|py|ts|go|rs|tf)", re.I)


@lru_cache(maxsize=4096)
def _subjects(clause_text: str) -> tuple[str, ...]:
    prose = re.sub(r"`[^`]*`", " ", clause_text)
    return tuple(m for m in _SUBJECT.findall(prose) if not _NOT_SUBJECT.fullmatch(m))


@lru_cache(maxsize=4096)
def _named_concepts(clause_text: str) -> tuple[Concept, ...]:
    return tuple(concept for concept in CONCEPTS if concept.named_by(clause_text))


@lru_cache(maxsize=4096)
def _frozen_paths(clause_text: str, polarity: Polarity, paths: tuple[str, ...]) -> tuple[str, ...]:
    """The paths a clause freezes ("applied migrations are never edited"), or none."""
    if polarity is not Polarity.PROHIBITION and not re.search(r"\bfrozen\b", clause_text, re.I):
        return ()
    if not _FROZEN.search(clause_text):
        return ()
    if not paths and re.search(r"\bmigrations?\b", clause_text, re.I):
        return ("migrations/", "*migrations/", "*/migrations/*", "migrate/", "db/migrate/")
    return paths


def _subject_evidence(
    index: DiffIndex, rule: Rule, clause: Clause, change: FileChange, stmts: list[Statement]
) -> list[Evidence]:
    """ "`apt-get` installs use `--no-install-recommends`": a line using the subject without the span."""
    found: list[Evidence] = []
    required = [s for s in clause.spans if s.role is SpanRole.REQUIRED]
    if clause.polarity is Polarity.PROHIBITION or len(required) != 1:
        return found
    subjects = _subjects(clause.text)
    need = span_regex(required[0].text)
    for subject in subjects:
        regex = span_regex(subject)
        if regex is None or need is None:
            continue
        for stmt in stmts:
            if regex.search(stmt.code) and not need.search(stmt.statement):
                confidence = 0.72 * _discount(index, rule, stmt, change, regex, 1)
                found.append(
                    Evidence(stmt, clause, confidence, f"uses `{subject}` without `{required[0].text}`")
                )
    return found


_FROZEN = re.compile(
    r"\b(never|not|don't|no)\s+(be\s+)?(edit\w*|modif\w*|chang\w*|touch\w*|rewrit\w*|alter\w*)\b|\bfrozen\b|"
    r"\b(append-only|immutable|read-only)\b.*\b(files?|migrations?|director\w*)\b",
    re.I,
)


def _frozen_evidence(
    index: DiffIndex, rule: Rule, clause: Clause, change: FileChange, stmts: list[Statement]
) -> list[Evidence]:
    """ "Applied migrations are never edited", "files under vendor/ are frozen": an existing file changed."""
    paths = _frozen_paths(clause.text, clause.polarity, clause.paths)
    if not paths or change.is_new or not path_matches(change.path, paths):
        return []
    first = change.added[0] if change.added else change.removed[0] if change.removed else None
    if first is None:
        return []
    stmt = next((st for st in stmts if st.line == first), None) or Statement(
        first, first.text, first.text, first.text, False, change.language
    )
    return [Evidence(stmt, clause, 0.8, "changes an existing file this rule freezes")]


def _concept_evidence(
    index: DiffIndex, rule: Rule, clause: Clause, change: FileChange, stmts: list[Statement]
) -> list[Evidence]:
    found: list[Evidence] = []
    required = [r for s in clause.spans if s.role is SpanRole.REQUIRED if (r := span_regex(s.text))]
    for concept in _named_concepts(clause.text):
        if concept.needs_required_span and not required:
            continue
        for pattern in concept.patterns:
            hits = index.hits(pattern, change)
            for stmt, hit in hits:
                uses_named = concept.needs_required_span and any(r.search(stmt.statement) for r in required)
                if uses_named or concept.exempts(clause.text, stmt.code):
                    continue
                confidence = hit.strength * _discount(index, rule, stmt, change, pattern, len(hits))
                if hit.inside_string:
                    confidence *= _IN_STRING
                found.append(
                    Evidence(stmt, clause, confidence, f"{hit.what} ({concept.name.replace('_', ' ')})")
                )
        if concept.detector is not None:
            by_number = {st.line.number: st for st in stmts}
            for line in concept.detector(change):
                opener = by_number.get(line.number)
                if opener is not None:
                    confidence = concept.detector_strength * (_IN_TEST if opener.in_test else 1.0)
                    found.append(Evidence(opener, clause, confidence, concept.detector_what))
    return found


def assess(rule: Rule, diff: ParsedDiff, index: DiffIndex | None = None) -> Finding | None:
    """The finding for ``rule`` on ``diff``, or None when no added line goes against it.

    Pass one :class:`DiffIndex` for every rule judged against the same diff: it keeps the work
    that does not depend on the rule.
    """
    index = index if index is not None and index.diff is diff else DiffIndex(diff)
    evidence: list[Evidence] = []
    for clause in rule.clauses:
        weight = _POLARITY_WEIGHT.get(clause.polarity)
        if weight is None:
            continue
        for change in diff.files:
            if not _in_scope(rule, clause, change):
                continue
            stmts = index.statements(change)
            for item in (
                *_span_evidence(index, rule, clause, change, stmts),
                *_required_head_evidence(index, rule, clause, change, stmts),
                *_concept_evidence(index, rule, clause, change, stmts),
                *_subject_evidence(index, rule, clause, change, stmts),
                *_frozen_evidence(index, rule, clause, change, stmts),
            ):
                evidence.append(Evidence(item.statement, item.clause, item.confidence * weight, item.reason))
    if not evidence:
        return None
    best: dict[tuple[str, int], Evidence] = {}
    for item in evidence:
        key = (item.statement.line.path, item.statement.line.number)
        title_only = (
            key in best and best[key].clause is rule.clauses[0] and item.clause is not rule.clauses[0]
        )
        if (
            key not in best
            or item.confidence > best[key].confidence
            or (title_only and item.confidence >= best[key].confidence)
        ):
            best[key] = item  # on a tie, quote the body's sentence rather than the title
    ranked = sorted(
        best.values(), key=lambda e: (-e.confidence, e.statement.line.path, e.statement.line.number)
    )
    top = ranked[0].confidence
    strong = [e for e in ranked[1:] if e.confidence >= 0.5]
    confidence = min(0.99, top + 0.03 * min(2, len(strong)))
    return Finding(rule, round(confidence, 3), tuple(ranked[:3]))
