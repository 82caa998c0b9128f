"""``memory.query`` ``match: "ranked"`` from the impact-ordered index, on both backends.

The ranking is :mod:`store.memory._rank`'s function; this module finds its best entries without
scoring every match. Each query term's list (``memory_rank_postings``) is read best impact first,
a block at a time, for all terms in turn (no random access while reading: NRA). After each round
every entry seen has a lower bound (the impacts seen, the others taken as absent) and an upper
bound (the others taken at the impact where their list stands, or at the term's ``bound`` once
the list is read to its end: no entry outside a list has more); an entry no list has shown yet
has at most every list's standing. Bounds sum in the score's own order, so rounding keeps them
bounds. The walk stops as soon as ``limit`` entries that pass the filters and are not summaries
have lower bounds above every other entry's upper bound; only those are then settled exactly,
from their stored terms, and ordered by the contract (score, importance, id).

A list read to its end with a ``bound`` of 0 holds its whole term: when every list is such, the
matches are all known once the lists are read, summaries included. Otherwise, when the lists end
before the limit is settled (filters that few entries pass, or rewritten entries that left a
list short), and always for ``limit`` 0 or a narrow scope, the matches are evaluated directly
from the stored terms of every candidate row (:func:`_evaluate`): the same function, the same
numbers. While entries written before the index wait in ``memory_rank_backlog``, the query is
answered by :func:`~store.memory._rank.reference_ranking` over the entries' text.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from store.memory._rank import idf, impact, query_terms, reference_ranking, score
from store.memory._search import MemoryFilter, reach_probe

__all__ = ["BLOCK", "NARROW", "ranked_ids"]

BLOCK = 256
"""Postings read from each list in the first round; each later round reads twice as many."""

NARROW = 2_000
"""A scope filter reaching fewer rows than this is answered by evaluating those rows directly."""

_MARGIN = 1.0 + 1e-12
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
    """One top-``limit`` walk down the lists of ``terms`` (see the module docstring)."""

    def __init__(
        self, conn: Any, terms: list[str], weights: list[float], bounds: list[float], filters: MemoryFilter
    ):
        self.conn, self.terms, self.weights, self.bounds, self.filters = conn, terms, weights, bounds, filters
        self.seen: dict[int, list[float | None]] = {}
        self.standing: list[float | None] = [None] * len(terms)  # last impact read; None: none yet
        self.ended = [False] * len(terms)
        self.info: dict[int, tuple[bool, int, str] | None] = {}  # None: fails the filters
        self.last_doc = [0] * len(terms)  # the doc of the last posting read, with standing: the keyset

    def run(self) -> list[tuple[str, float]] | None:
        """The answer, or ``None`` when the lists cannot settle it and every match must be scored."""
        size = BLOCK
        while True:
            for index, term in enumerate(self.terms):
                if not self.ended[index]:
                    self._read(index, term, size)
            size *= 2
            settled = self._settled()
            if settled is not None:
                return settled
            if all(self.ended):
                return self._everything() if not any(self.bounds) else None

    def _read(self, index: int, term: str, size: int) -> None:
        last = self.standing[index]
        sql = "SELECT impact, doc FROM memory_rank_postings WHERE term = :term"
        params: dict[str, Any] = {"term": term, "size": size}
        if last is not None:
            sql += " AND (impact < :impact OR (impact = :impact AND doc > :doc))"
            params.update(impact=last, doc=self.last_doc[index])
        rows = self.conn.execute(sql + " ORDER BY impact DESC, doc LIMIT :size", params).fetchall()
        for weight, doc in rows:
            self.seen.setdefault(int(doc), [None] * len(self.terms))[index] = float(weight)
        if rows:
            self.standing[index] = float(rows[-1][0])
            self.last_doc[index] = int(rows[-1][1])
        if len(rows) < size:
            self.ended[index] = True

    def _ceiling(self, index: int) -> float:
        """The most impact term ``index`` can have in an entry its list has not shown."""
        standing = self.standing[index]
        if self.ended[index] or standing is None:
            return self.bounds[index] if self.ended[index] else float("inf")
        return max(standing, self.bounds[index])

    def _settled(self) -> list[tuple[str, float]] | None:
        ceilings = [self._ceiling(index) for index in range(len(self.terms))]
        lower = {doc: score(self.weights, known) for doc, known in self.seen.items()}
        order = sorted(lower, key=lambda doc: -lower[doc])
        top: list[int] = []
        for start in range(0, len(order), 4 * self.filters.limit):
            self._fetch_info(order[start : start + 4 * self.filters.limit])
            top += [doc for doc in order[start : start + 4 * self.filters.limit] if self._counts(doc)]
            if len(top) >= self.filters.limit:
                break
        if len(top) < self.filters.limit:
            return None
        top = top[: self.filters.limit]
        threshold = lower[top[-1]]
        chosen = set(top)
        unseen = score(self.weights, ceilings)
        if unseen * _MARGIN >= threshold:
            return None
        for doc, known in self.seen.items():
            if doc in chosen or (doc in self.info and not self._counts(doc)):
                continue  # settled, or out: filtered out, or a summary (after every other entry)
            upper = score(self.weights, [c if k is None else k for k, c in zip(known, ceilings, strict=True)])
            if upper * _MARGIN >= threshold:
                return None
        return self._exact(top)

    def _counts(self, doc: int) -> bool:
        """Whether ``doc`` passes the filters and is not a summary."""
        info = self.info.get(doc)
        return info is not None and not info[0]

    def _fetch_info(self, docs: Sequence[int]) -> None:
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

    def _exact(self, docs: list[int]) -> list[tuple[str, float]]:
        """The exact scores of ``docs`` (from their stored terms where a list left one open), in order."""
        open_docs = [
            doc
            for doc in docs
            if any(
                k is None and not (self.ended[i] and not self.bounds[i]) for i, k in enumerate(self.seen[doc])
            )
        ]
        if open_docs:
            marks = ", ".join("?" * len(open_docs))
            sql = f"SELECT doc, length, terms FROM memory_rank_docs WHERE doc IN ({marks})"
            for doc, length, terms in self.conn.execute(sql, open_docs).fetchall():
                self.seen[int(doc)] = _impacts(self.terms, int(length), json.loads(terms))
        return _ordered([(self._key(doc), info) for doc in docs if (info := self.info[doc]) is not None])

    def _key(self, doc: int) -> float:
        return score(self.weights, self.seen[doc])

    def _everything(self) -> list[tuple[str, float]]:
        """Every match, when every list held its whole term: all known exactly."""
        self._fetch_info(list(self.seen))
        found = [
            (self._key(doc), info) for doc, info in self.info.items() if info is not None and doc in self.seen
        ]
        return _ordered(found)[: self.filters.limit]


def _ordered(found: list[tuple[float, tuple[bool, int, str]]]) -> list[tuple[str, float]]:
    keys: list[Key] = sorted((info[0], -value, -info[1], info[2]) for value, info in found)
    return [(entry_id, -negated) for _, negated, _, entry_id in keys]


def _impacts(terms: Sequence[str], length: int, counts: dict[str, int]) -> list[float | None]:
    return [impact(counts[term], length) if term in counts else None for term in terms]


def _evaluate(
    conn: Any, terms: list[str], weights: list[float], filters: MemoryFilter
) -> list[tuple[str, float]]:
    """Every match of ``terms`` that passes ``filters``, scored from the stored terms, in order."""
    where, params = _where(filters)
    tests = []
    for index, term in enumerate(terms):
        params[f"t{index}"] = json.dumps(term, ensure_ascii=False) + ":"
        tests.append(f"instr(d.terms, :t{index}) > 0")
    where.append(f"({' OR '.join(tests)})")
    sql = (
        "SELECT d.length, d.terms, m.lc_kind = 'summary', m.importance, m.id FROM memory_entries AS m"
        f" JOIN memory_rank_docs AS d ON d.id = m.id WHERE {' AND '.join(where)}"
    )
    found = []
    for length, stored, summary, importance, entry_id in conn.execute(sql, params):
        impacts = _impacts(terms, int(length), json.loads(stored))
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
