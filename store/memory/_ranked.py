"""``memory.query`` ``match: "ranked"`` from the impact-ordered index, on both backends.

The ranking is :mod:`store.memory._rank`'s function; this module finds its best entries without
scoring every match. Every query term has a list (``memory_rank_postings``) that holds each entry
of the term whose impact is above the term's ``bound`` (long lists are cut: :mod:`._rank_index`).
The lists are read whole (a list is at most ``2 * KEEP`` postings, however large the corpus),
one plain ordered read each, into a map per term; no statement groups or sorts them. An entry's
**upper bound** is its impacts in the lists plus, for each term whose list it is not in, that
term's ``bound`` (0 for a whole list: it does not hold the term), summed as :func:`score` sums
and raised by :func:`_raised`. The entries in one list only have a bound that falls with their
one impact, so each list, walked in its own order and skipping the few entries in two lists or
more, yields them best bound first; those few are sorted by their bounds; a lazy merge of these
streams gives every entry of the lists best bound first, while only the entries it reaches are
looked at. They are settled :data:`BLOCK` at a time: the exact score from the maps when every
term is in the entry's lists or its list is whole, else from the entry's stored terms (one read
of those rows, no JSON parsing); filters (and whether it is a summary) only for the entries
that could still place. It stops as soon as ``limit`` settled entries that count (pass the
filters, are not summaries) score above the next upper bound and above what an entry in no
list at all may score (every term at its bound): no entry left can reach the last place, ties
included. An early stop that drops a better entry would need a stream out of order, which the
lists' order rules out (``tests/store/memory/test_memory_ranked.py`` tries to make one).

When the lists cannot settle it (an entry in no list could place, or fewer than ``limit`` entries
count), and for ``limit`` 0 or a scope of fewer than :data:`NARROW` entries, every candidate row is
scored from its stored terms instead (:func:`_evaluate`): the same function, the same numbers.
When every list is whole (no bound), the lists hold every match, summaries included. While
entries written before the index wait in ``memory_rank_backlog``, the query is answered by
:func:`~store.memory._rank.reference_ranking` over the entries' text.
"""

from __future__ import annotations

import heapq
import itertools
import json
from collections.abc import Iterator, Sequence
from typing import Any

from store.memory._rank import idf, impact, query_terms, reference_ranking, score
from store.memory._search import MemoryFilter, reach_probe

__all__ = ["BLOCK", "NARROW", "ranked_ids"]

BLOCK = 64
"""Entries of the lists settled at a time, best upper bound first."""

NARROW = 2_000
"""A scope filter reaching fewer rows than this is answered by evaluating those rows directly."""

_MARGIN = 1.0 + 1e-9
"""Upper bounds are raised by this factor: a sum taken in another order may round lower."""

Key = tuple[bool, float, int, str]  # is a summary, -score, -importance, id: the contract's order


def ranked_ids(conn: Any, text: str, filters: MemoryFilter) -> list[tuple[str, float]]:
    """``(id, score)`` of the entries ``memory.query`` ranks for ``text`` (which holds a term)."""
    terms = query_terms(text)
    if conn.execute("SELECT 1 FROM memory_rank_backlog LIMIT 1").fetchone() is not None:
        return _reference(conn, text, filters)
    marks = ", ".join("?" * (len(terms) + 1))
    stats = {
        row[0]: (int(row[1]), float(row[2]))
        for row in conn.execute(
            f"SELECT term, df, bound FROM memory_rank_terms WHERE term IN ({marks})", ["", *terms]
        )
    }
    total = stats.get("", (0, 0.0))[0]
    present = [term for term in terms if stats.get(term, (0, 0.0))[0] > 0]
    if not present:
        return []
    weights = [idf(stats[term][0], total) for term in present]
    if filters.scope is None and filters.allowed_scopes == frozenset():
        return []  # no scope at all is allowed
    probe = reach_probe(filters, NARROW)
    narrow = probe is not None and int(conn.execute(*probe).fetchone()[0]) < NARROW
    if filters.limit <= 0 or narrow:
        return _evaluate(conn, present, weights, filters)
    walk = _Walk(conn, present, weights, [stats[term][1] for term in present], filters)
    found = walk.run()
    return _evaluate(conn, present, weights, filters) if found is None else found


class _Walk:
    """One top-``limit`` search over the lists of ``terms`` (see the module docstring)."""

    def __init__(
        self, conn: Any, terms: list[str], weights: list[float], bounds: list[float], filters: MemoryFilter
    ):
        self.conn, self.terms, self.weights, self.bounds, self.filters = conn, terms, weights, bounds, filters
        self.lists = [conn.execute(_LIST, (term,)).fetchall() for term in terms]
        self.maps: list[dict[int, float]] = [{doc: value for value, doc in rows} for rows in self.lists]
        self.multi: set[int] = set()  # the entries in two lists or more
        keys = [found.keys() for found in self.maps]
        for index, first in enumerate(keys):
            for second in keys[index + 1 :]:
                self.multi |= first & second
        self.exact: dict[int, float] = {}
        self.info: dict[int, tuple[bool, int, str] | None] = {}  # None: fails the filters
        self.kth: float | None = None
        self.best: list[int] = []  # the settled entries that count and may place, best first

    def run(self) -> list[tuple[str, float]] | None:
        """The answer, or ``None`` when the lists cannot settle it and every match must be scored."""
        limit = self.filters.limit
        unseen = _raised(score(self.weights, [bound or None for bound in self.bounds]))  # in no list
        candidates = heapq.merge(self._shared(), *(self._alone(index) for index in range(len(self.lists))))
        while chunk := list(itertools.islice(candidates, BLOCK)):
            if self.kth is not None and _raised(-chunk[0][0]) < self.kth:
                break  # no entry left in the lists can reach the last place
            self._settle([doc for upper, doc in chunk if self.kth is None or _raised(-upper) >= self.kth])
        if self.kth is not None and self.kth > unseen:
            return self._ordered(self.best)[:limit]
        if any(self.bounds):
            return None  # an entry below a cut, or in no list, could still place
        everything = list(self.exact)  # every list whole: every match settled
        return self._ordered([doc for doc in everything if self.info[doc] is not None])[:limit]

    def _upper(self, impacts: list[float | None]) -> float:
        """The most an entry with these impacts in the lists (``None``: not in that list) may
        score: each term it is missing from at that term's bound (summed as :func:`score` sums)."""
        return score(
            self.weights,
            [
                bound or None if value is None else value
                for value, bound in zip(impacts, self.bounds, strict=True)
            ],
        )

    def _shared(self) -> list[tuple[float, int]]:
        """``(-upper bound, doc)`` of the entries in two lists or more, best first."""
        return sorted((-self._upper([found.get(doc) for found in self.maps]), doc) for doc in self.multi)

    def _alone(self, index: int) -> Iterator[tuple[float, int]]:
        """``(-upper bound, doc)`` of the entries in list ``index`` alone, best first: in the
        list's own order, as their bound grows with their one impact."""
        impacts: list[float | None] = [None] * len(self.lists)
        for value, doc in self.lists[index]:
            if doc not in self.multi:
                impacts[index] = value
                yield -self._upper(impacts), doc

    def _settle(self, docs: list[int]) -> None:
        """The exact scores of ``docs``: from the lists' impacts when those are all of theirs (in
        a list or without its term), else from their stored terms; then the filters of those
        that may place."""
        probe = []
        for doc in docs:
            impacts = [found.get(doc) for found in self.maps]
            if all(value is not None or not bound for value, bound in zip(impacts, self.bounds, strict=True)):
                self.exact[doc] = score(self.weights, impacts)
            else:
                probe.append(doc)
        if probe:
            self._probe(probe)
        hopeful = [doc for doc in docs if self.kth is None or self.exact[doc] >= self.kth]
        self._fetch(hopeful)
        best = sorted([*self.best, *(doc for doc in hopeful if self._counts(doc))], key=self._rank)
        limit = self.filters.limit
        if len(best) >= limit:
            self.kth = self.exact[best[limit - 1]]
            best = [doc for doc in best if self.exact[doc] >= self.kth]  # the limit-th and its ties
        self.best = best

    def _rank(self, doc: int) -> tuple[float, int]:
        return -self.exact[doc], doc

    def _counts(self, doc: int) -> bool:
        """Whether ``doc`` passes the filters and is not a summary."""
        info = self.info.get(doc)
        return info is not None and not info[0]

    def _probe(self, docs: list[int]) -> None:
        """The exact scores of ``docs`` from their stored terms."""
        keys = _keys(self.terms)
        sql = f"SELECT doc, length, terms FROM memory_rank_docs WHERE doc IN ({_marks(len(docs))})"
        for doc, length, stored in self.conn.execute(sql, docs):
            self.exact[int(doc)] = score(self.weights, _impacts(keys, int(length), stored))

    def _fetch(self, docs: Sequence[int]) -> None:
        """Whether each of ``docs`` passes the filters, and whether it is a summary, its importance
        and its ID."""
        wanted = [doc for doc in docs if doc not in self.info]
        if not wanted:
            return
        where, params = _where(self.filters)
        names = []
        for index, doc in enumerate(wanted):
            params[f"d{index}"] = doc
            names.append(f":d{index}")
            self.info[doc] = None
        where.append(f"d.doc IN ({', '.join(names)})")
        sql = (
            "SELECT d.doc, m.lc_kind = 'summary', m.importance, m.id FROM memory_rank_docs AS d"
            f" JOIN memory_entries AS m ON m.id = d.id WHERE {' AND '.join(where)}"
        )
        for doc, summary, importance, entry_id in self.conn.execute(sql, params):
            self.info[int(doc)] = (bool(summary), int(importance), str(entry_id))

    def _ordered(self, docs: list[int]) -> list[tuple[str, float]]:
        self._fetch(docs)
        return _ordered([(self.exact[doc], info) for doc in docs if (info := self.info[doc]) is not None])


_LIST = "SELECT impact, doc FROM memory_rank_postings WHERE term = ? ORDER BY impact DESC, doc"


def _marks(count: int) -> str:
    return ", ".join("?" * count)


def _count(stored: str, key: str) -> int | None:
    """The count of the term whose JSON key (with its colon) is ``key`` in an entry's stored
    terms (a JSON object of term counts, whose keys hold no quote), or ``None``."""
    at = stored.find(key)
    if at < 0:
        return None
    start = at + len(key)
    end = stored.find(",", start)  # the count ends at the next comma, or at the object's end
    return int(stored[start : end if end >= 0 else len(stored) - 1])


def _raised(value: float) -> float:
    """``value`` raised past any difference the order of a floating-point sum makes."""
    return value * _MARGIN + 1e-12


def _ordered(found: list[tuple[float, tuple[bool, int, str]]]) -> list[tuple[str, float]]:
    keys: list[Key] = sorted((info[0], -value, -info[1], info[2]) for value, info in found)
    return [(entry_id, -negated) for _, negated, _, entry_id in keys]


def _impacts(keys: Sequence[str], length: int, stored: str) -> list[float | None]:
    """The impacts of the terms whose JSON keys are ``keys`` in an entry's stored terms."""
    return [None if tf is None else impact(tf, length) for tf in (_count(stored, key) for key in keys)]


def _keys(terms: Sequence[str]) -> list[str]:
    """The terms as the keys (with their colon) of an entry's stored terms."""
    return [json.dumps(term, ensure_ascii=False) + ":" for term in terms]


def _evaluate(
    conn: Any, terms: list[str], weights: list[float], filters: MemoryFilter
) -> list[tuple[str, float]]:
    """Every match of ``terms`` that passes ``filters``, scored from the stored terms, in order."""
    where, params = _where(filters)
    keys = _keys(terms)
    tests = []
    for index, key in enumerate(keys):
        params[f"t{index}"] = key
        tests.append(f"instr(d.terms, :t{index}) > 0")
    where.append(f"({' OR '.join(tests)})")
    sql = (
        "SELECT d.length, d.terms, m.lc_kind = 'summary', m.importance, m.id FROM memory_entries AS m"
        f" JOIN memory_rank_docs AS d ON d.id = m.id WHERE {' AND '.join(where)}"
    )
    found = []
    for length, stored, summary, importance, entry_id in conn.execute(sql, params):
        impacts = _impacts(keys, int(length), stored)
        if any(value is not None for value in impacts):
            found.append((score(weights, impacts), (bool(summary), int(importance), str(entry_id))))
    ordered = _ordered(found)
    return ordered[: filters.limit] if filters.limit > 0 else ordered


def _reference(conn: Any, text: str, filters: MemoryFilter) -> list[tuple[str, float]]:
    """The answer while the index is incomplete: the function evaluated over every entry's text."""
    rows = conn.execute(
        "SELECT m.id, m.lc_title, m.lc_body, m.lc_scope, m.lc_kind, m.importance FROM memory_entries AS m"
    ).fetchall()
    where, params = _where(filters)
    passing = f"SELECT m.id FROM memory_entries AS m WHERE {' AND '.join(where) or '1 = 1'}"
    passes = {row[0]: True for row in conn.execute(passing, params)}
    entries = [(row[0], row[1:5], row[4] == "summary", int(row[5])) for row in rows]
    found = reference_ranking(entries, text, passes=passes)
    return found[: filters.limit] if filters.limit > 0 else found


def _where(filters: MemoryFilter) -> tuple[list[str], dict[str, Any]]:
    """The filters' conditions in SQL both backends read (no bare ``0``, no ``:limit``)."""
    where, params = filters.where()
    params.pop("limit")
    return ["1 = 0" if clause == "0" else clause for clause in where], params
