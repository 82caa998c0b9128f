"""Memory entries that read like a project's memory: a deterministic, realistic corpus.

``bench_memory`` first drew its entries from 34 words, so every query matched nearly every entry and
no index could help or be judged. This corpus follows the shape of real text instead:

- a vocabulary of :data:`VOCABULARY_SIZE` words drawn by Zipf's law (the word of rank ``r`` is
  drawn with weight ``1 / r``): English function words at the top, then technical words, then
  generated pseudo-words, shorter ones first (frequent words are short);
- code identifiers (``snake_case``, ``CamelCase``, ``CONSTANT_CASE``, dotted module paths, file
  paths), themselves Zipf-distributed, some in backticks: about one token in sixteen;
- titles of 4 to 12 words, bodies of 30 to 300 words (log-uniform, mean about 117) in sentences,
  sometimes a bullet list; scopes ``project`` or one of 5,000 tasks; the usual kinds.

The query terms the benchmark uses are fixed ranks of this vocabulary (:class:`Terms`), so their
frequencies are known: :data:`COMMON` is at rank 40 and occurs in about a third of the entries.
Everything comes from one ``random.Random(seed)``: the same seed gives the same corpus.
"""

from __future__ import annotations

import itertools
import math
import random
from bisect import bisect
from collections.abc import Iterator
from dataclasses import dataclass

__all__ = ["COMMON", "VOCABULARY_SIZE", "Corpus", "Terms"]

VOCABULARY_SIZE = 40_000
COMMON = "rollback"
"""The ``'rollback'``-like common word: placed at rank 40, in about a third of the entries."""

_FUNCTION = (
    "the of and to a in is that for it as with be on not this by are or from at which but an have "
    "was all we can if when will one should so only there no must each than then use into"
).split()
_TECHNICAL = (
    "rollback cache index query migration schema token retry queue worker deploy config logging "
    "metrics latency owner reviewer vote decision constraint memory oracle patch proposal task "
    "database transaction lock timeout request response server client error test build release "
    "branch commit merge review version api endpoint handler session user role agent policy "
    "event stream buffer batch page cursor limit offset backoff budget trace span sql builder"
).split()
_ONSETS = "b c d f g h j k l m n p r s t v w z br cr dr fl gr pl pr sl st tr ch sh th".split()
_VOWELS = "a e i o u a e i o ea ou io".split()
_CODAS = ["", "", "", "n", "r", "s", "t", "l", "nd", "st", "ck", "ng"]


def _pseudo_words(rng: random.Random, count: int, taken: frozenset[str]) -> list[str]:
    """``count`` distinct pronounceable words of 1 to 4 syllables, shortest first."""
    words: dict[str, None] = {}  # insertion-ordered: a set's order changes with the hash seed
    while len(words) < count:
        syllables = rng.choices((1, 2, 3, 4), weights=(2, 5, 4, 2))[0]
        word = "".join(rng.choice(_ONSETS) + rng.choice(_VOWELS) for _ in range(syllables))
        word += rng.choice(_CODAS)
        if word not in taken:
            words[word] = None
    # Zipf's law of abbreviation: frequent words are short (with some noise in the order).
    return sorted(words, key=lambda w: (len(w) + rng.random() * 4, w))


def _identifiers(rng: random.Random, words: list[str], count: int) -> list[str]:
    """``count`` distinct code identifiers built from common words, in five styles."""
    pool = words[len(_FUNCTION) : len(_FUNCTION) + 2_000]
    found: dict[str, None] = {}
    while len(found) < count:
        parts = rng.sample(pool, rng.randint(2, 3))
        style = rng.random()
        if style < 0.35:
            name = "_".join(parts)
        elif style < 0.6:
            name = "".join(part.capitalize() for part in parts)
        elif style < 0.7:
            name = "_".join(parts).upper()
        elif style < 0.9:
            name = ".".join(parts[:-1]) + "." + ("_" if rng.random() < 0.3 else "") + parts[-1]
        else:
            name = "/".join(parts) + rng.choice((".py", ".sql", ".md", ".toml"))
        found[name] = None
    return list(found)


def _zipf(count: int) -> list[float]:
    """Cumulative Zipf weights (``1 / rank``) for ``count`` ranks."""
    return list(itertools.accumulate(1.0 / rank for rank in range(1, count + 1)))


@dataclass(frozen=True)
class Terms:
    """Query terms of known frequency, taken from the corpus's own vocabulary."""

    common: str
    """:data:`COMMON` (rank 40): in about a third of the entries."""
    very_common: str
    """``the`` (rank 1): in nearly every entry."""
    rare: str
    """A generated word of rank 30,000: in a few dozen entries per 100,000."""
    rare_identifier: str
    """A code identifier of rank 2,500 among 3,000."""
    ranked: tuple[str, ...]
    """Queries for ``match: "ranked"``: two mid-frequency words; a word and an identifier (its three
    terms); a common pair, each word in about a fifth of the entries (the hard case for a top-k
    walk: their lists are cut, and the best must be settled from their prefixes)."""


class Corpus:
    """A deterministic generator of realistic memory entries (see the module docstring)."""

    def __init__(self, seed: int = 15):
        self.rng = random.Random(seed)
        generated = _pseudo_words(
            self.rng, VOCABULARY_SIZE - len(_FUNCTION) - len(_TECHNICAL), frozenset(_FUNCTION + _TECHNICAL)
        )
        tech = [w for w in _TECHNICAL if w != COMMON]
        # Function words first; COMMON at rank 40; technical words spread over ranks 50 to ~1,300.
        words = [*_FUNCTION[:39], COMMON, *_FUNCTION[39:]]
        spread = iter(tech)
        for index, word in enumerate(generated):
            words.append(word)
            if index % 20 == 0:
                words.extend(itertools.islice(spread, 1))
        self.words = list(dict.fromkeys([*words, *spread]))
        self.identifiers = _identifiers(self.rng, self.words, 3_000)
        self._word_weights = _zipf(len(self.words))
        self._ident_weights = _zipf(len(self.identifiers))
        self.terms = Terms(
            common=COMMON,
            very_common="the",
            rare=self.words[30_000],
            rare_identifier=self.identifiers[2_500],
            ranked=(
                f"{self.words[900]} {self.words[1_400]}",
                f"{self.words[2_000]} {self.identifiers[40]}",
                f"{COMMON} cache",
            ),
        )

    def _tokens(self, count: int) -> list[str]:
        """``count`` tokens: Zipf words, about one in sixteen a code identifier."""
        rng = self.rng
        words, word_cum = self.words, self._word_weights
        word_total = word_cum[-1]
        tokens = [words[bisect(word_cum, rng.random() * word_total)] for _ in range(count)]
        idents, ident_cum = self.identifiers, self._ident_weights
        for _ in range(max(0, round(count / 16 + rng.gauss(0, 1)))):
            name = idents[bisect(ident_cum, rng.random() * ident_cum[-1])]
            tokens[rng.randrange(count)] = f"`{name}`" if rng.random() < 0.5 else name
        return tokens

    def _body(self, count: int) -> str:
        """``count`` words in sentences of 6 to 20 words; now and then a bullet list."""
        rng = self.rng
        tokens = self._tokens(count)
        parts: list[str] = []
        start = 0
        while start < count:
            end = min(count, start + rng.randint(6, 20))
            sentence = tokens[start:end]
            sentence[0] = sentence[0][:1].upper() + sentence[0][1:]
            if len(sentence) > 8 and rng.random() < 0.4:
                sentence[rng.randrange(1, len(sentence) - 1)] += ","
            bullet = rng.random() < 0.08
            parts.append(("\n- " if bullet else " ") + " ".join(sentence) + ("" if bullet else "."))
            start = end
        return "".join(parts).strip()

    def entry(self, index: int) -> dict[str, object]:
        """The fields of entry ``index`` for ``memory.record``."""
        rng = self.rng
        title = " ".join(self._tokens(rng.randint(4, 12)))
        words = int(30 * math.pow(10, rng.random()))
        return {
            "scope": "project" if rng.random() < 0.3 else f"T-{rng.randrange(5_000):04d}",
            "kind": rng.choices(("decision", "constraint", "fact", "summary", "note"), (4, 2, 3, 1, 1))[0],
            "title": title[:1].upper() + title[1:],
            "body_md": self._body(words),
            "importance": rng.randint(1, 100),
        }

    def entries(self, start: int, stop: int) -> Iterator[dict[str, object]]:
        """Entries ``start`` to ``stop - 1``, in order (call in order: the generator is sequential)."""
        for index in range(start, stop):
            yield self.entry(index)
