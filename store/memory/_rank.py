"""The ranking function of ``memory.query`` ``match: "ranked"``: BM25 over our own terms, exactly.

One documented function, computed the same way by the index (:mod:`store.memory._ranked`) and by
:func:`reference_ranking`, a direct evaluation over the entries' text that the property tests
hold the index to, entry for entry and bit for bit:

- **terms**: the maximal runs of letters and digits (``[^\\W_]+``, Python's Unicode classes) of an
  entry's lower-cased title, body, scope and kind (the ``lc_*`` shadow columns, Python's
  ``lower()``), each field on its own, with diacritics removed (canonical decomposition, combining
  marks dropped: ``café`` is ``cafe``, as FTS5's ``unicode61`` tokenizer folds them); the query's
  terms are those of the lower-cased query, folded alike, distinct, in code-point order
  (:func:`query_terms`);
- **df, N**: the number of stored entries holding a term, and the number of entries;
- **idf** = ``ln(1 + (N - df + 0.5) / (df + 0.5))`` (:func:`idf`), always positive;
- **impact** of a term in an entry with ``tf`` occurrences among ``dl`` terms =
  ``tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / L))`` with ``k1 = 1.2``, ``b = 0.75`` and a
  fixed reference length ``L = 100`` terms in place of the corpus average (:func:`impact`): so an
  entry's impacts depend on that entry alone, and are stored once, when it is written;
- **score** = the sum, in the query terms' order, of ``idf * impact`` over the query terms the
  entry holds (:func:`score`); an entry holding none is not a match.

Order: summaries last, then score, importance (both descending), then id: the contract's.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

__all__ = [
    "AVERAGE_LENGTH",
    "K1",
    "B",
    "entry_terms",
    "idf",
    "impact",
    "query_terms",
    "reference_ranking",
    "score",
]

K1 = 1.2
B = 0.75
AVERAGE_LENGTH = 100.0
"""The reference entry length (in terms) that BM25's length normalisation divides by."""

_TERM = re.compile(r"[^\W_]+")


def _terms(text: str) -> list[str]:
    """The terms of already lower-cased text, diacritics removed (ASCII terms as they are)."""
    found = _TERM.findall(text)
    if text.isascii():
        return found
    folded = (
        term
        if term.isascii()
        else "".join(c for c in unicodedata.normalize("NFD", term) if not unicodedata.combining(c))
        for term in found
    )
    return [term for term in folded if term]


def query_terms(text: str) -> list[str]:
    """The distinct terms of ``text`` lower-cased and folded, in code-point order: the query's terms."""
    return sorted(set(_terms(text.lower())))


def entry_terms(fields: Iterable[str]) -> tuple[Counter[str], int]:
    """The term frequencies and the length (in terms) of an entry's lower-cased fields."""
    counts: Counter[str] = Counter()
    for field in fields:
        counts.update(_terms(field))
    return counts, sum(counts.values())


def idf(df: int, total: int) -> float:
    """The inverse document frequency of a term held by ``df`` of ``total`` entries."""
    return math.log(1.0 + (total - df + 0.5) / (df + 0.5))


def impact(tf: int, length: int) -> float:
    """BM25's saturated term frequency of ``tf`` occurrences in an entry of ``length`` terms."""
    return tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * length / AVERAGE_LENGTH))


def score(weights: Sequence[float], impacts: Sequence[float | None]) -> float:
    """An entry's score: ``weights[i] * impacts[i]`` summed in order, skipping terms it lacks."""
    total = 0.0
    for weight, value in zip(weights, impacts, strict=True):
        if value is not None:
            total += weight * value
    return total


def reference_ranking(
    entries: Iterable[tuple[str, Sequence[str], bool, int]],
    text: str,
    *,
    passes: Mapping[str, bool] | None = None,
) -> list[tuple[str, float]]:
    """``(id, score)`` of every match of ``text``, in the contract's order, evaluated directly.

    ``entries`` are ``(id, lower-cased fields, is a summary, importance)`` of **every** stored
    entry (they make N and df); ``passes`` (by id), when given, keeps only the entries the
    query's filters let through. The index must answer exactly this.
    """
    terms = query_terms(text)
    rows = [
        (entry_id, *entry_terms(fields), summary, importance)
        for entry_id, fields, summary, importance in entries
    ]
    df = Counter(term for _, counts, _, _, _ in rows for term in terms if term in counts)
    weights = [idf(df[term], len(rows)) for term in terms]
    found = []
    for entry_id, counts, length, summary, importance in rows:
        if passes is not None and not passes.get(entry_id, False):
            continue
        impacts = [impact(counts[term], length) if term in counts else None for term in terms]
        if any(value is not None for value in impacts):
            found.append((summary, -score(weights, impacts), -importance, entry_id))
    return [(entry_id, -negated) for _, negated, _, entry_id in sorted(found)]
