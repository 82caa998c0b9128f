"""``memory.query`` ``match: "ranked"`` from the impact-ordered index, on both backends.

The ranking is :mod:`store.memory._rank`'s function; this module finds its best entries without
scoring every match. Every query term has a list (``memory_rank_postings``) that holds each entry
of the term whose impact is above the term's ``bound`` (long lists are cut: :mod:`._rank_index`).
One statement groups the lists' postings by entry and orders the entries by an **upper bound**:
their impacts in the lists, and each term missing from an entry's postings at that term's bound
(summed in SQL's order, raised by :func:`_raised` so rounding cannot make it lower). The search
then settles entries in that order, :data:`BLOCK` at a time: an entry's exact score comes from
its impacts in the lists, or, for a term missing from them whose list was cut, from its stored
terms. Filters (and whether it is a summary) are looked up only for entries that could still
place. It stops as soon as ``limit`` settled entries that count (pass the filters, are not
summaries) score above the next upper bound, and above what an entry in no list at all may score
(every term at its bound): no entry left can reach the last place, ties included.

When the lists cannot settle it (an entry in no list could place, or fewer than ``limit`` entries
count), and for ``limit`` 0 or a scope of fewer than :data:`NARROW` entries, every candidate row is
scored from its stored terms instead (:func:`_evaluate`): the same function, the same numbers.
When every list is whole (no bound), the lists hold every match, summaries included. While
entries written before the index wait in ``memory_rank_backlog``, the query is answered by
:func:`~store.memory._rank.reference_ranking` over the entries' text.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
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
        self.info: dict[int, tuple[bool, int, str] | None] = {}  # None: fails the filters
        self.exact: dict[int, float] = {}

    def run(self) -> list[tuple[str, float]] | None:
        """The answer, or ``None`` when the lists cannot settle it and every match must be scored."""
        limit = self.filters.limit
        unseen = _raised(score(self.weights, self.bounds))  # an entry in no list has at most this
        cursor = self.conn.execute(*self._uppers())
        kth: float | None = None
        best: list[int] = []  # the entries that count, settled, that may place
        while chunk := cursor.fetchmany(BLOCK):
            if kth is not None and _raised(float(chunk[0][1])) < kth:
                cursor.close()  # no entry from here on can reach the last place
                return self._ordered(best)[:limit] if kth > unseen else None
            self._settle(chunk)
            hopeful = [int(row[0]) for row in chunk if kth is None or self.exact[int(row[0])] >= kth]
            self._fetch_info(hopeful)
            best = sorted([*best, *(doc for doc in hopeful if self._counts(doc))], key=self._rank)
            if len(best) >= limit:
                kth = self.exact[best[limit - 1]]
                best = [doc for doc in best if self.exact[doc] >= kth]  # the limit-th and its ties
        if kth is not None and kth > unseen:
            return self._ordered(best)[:limit]
        if any(self.bounds):
            return None
        everything = list(self.exact)  # every list whole, every entry of them settled
        self._fetch_info(everything)
        return self._ordered([doc for doc in everything if self.info[doc] is not None])[:limit]

    def _rank(self, doc: int) -> tuple[float, int]:
        return -self.exact[doc], doc

    def _uppers(self) -> tuple[str, dict[str, Any]]:
        """Every entry of the lists, best upper bound first: ``(doc, upper bound, impact in each
        list or NULL)``. The bound counts each term missing from the entry's postings at its
        ``bound`` (a sum in SQL's order, which :func:`_raised` allows for)."""
        params: dict[str, Any] = {}
        seen, missing, impacts = [], [], []
        for index, (term, weight, bound) in enumerate(
            zip(self.terms, self.weights, self.bounds, strict=True)
        ):
            params.update({f"t{index}": term, f"w{index}": weight, f"b{index}": weight * bound})
            seen.append(f"WHEN :t{index} THEN :w{index} * impact")
            missing.append(f"WHEN :t{index} THEN :b{index}")
            impacts.append(f"max(CASE term WHEN :t{index} THEN impact END)")
        absent = " + ".join(f":b{index}" for index in range(len(self.terms)))
        marks = ", ".join(f":t{index}" for index in range(len(self.terms)))
        upper = f"sum(CASE term {' '.join(seen)} END) + ({absent}) - sum(CASE term {' '.join(missing)} END)"
        sql = (
            f"SELECT doc, {upper} AS upper, {', '.join(impacts)} FROM memory_rank_postings"
            f" WHERE term IN ({marks}) GROUP BY doc ORDER BY upper DESC, doc"
        )
        return sql, params

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

    def _settle(self, rows: Sequence[Any]) -> None:
        """The exact scores of the entries of ``rows`` (from :meth:`_uppers`): their impacts in
        the lists, and for a term missing from them whose list was cut, from their stored terms."""
        probe = []
        for doc, _, *impacts in rows:
            if any(value is None and bound for value, bound in zip(impacts, self.bounds, strict=True)):
                probe.append(int(doc))
            else:
                self.exact[int(doc)] = score(self.weights, [None if v is None else float(v) for v in impacts])
        if not probe:
            return
        params: dict[str, Any] = {f"p{i}": f"$.{term}" for i, term in enumerate(self.terms)}
        params.update({f"d{i}": doc for i, doc in enumerate(probe)})
        tfs = ", ".join(f"json_extract(terms, :p{i})" for i in range(len(self.terms)))
        marks = ", ".join(f":d{i}" for i in range(len(probe)))
        sql = f"SELECT doc, length, {tfs} FROM memory_rank_docs WHERE doc IN ({marks})"
        for doc, length, *counts in self.conn.execute(sql, params).fetchall():
            impacts = [None if tf is None else impact(int(tf), int(length)) for tf in counts]
            self.exact[int(doc)] = score(self.weights, impacts)

    def _ordered(self, docs: list[int]) -> list[tuple[str, float]]:
        self._fetch_info(docs)
        return _ordered([(self.exact[doc], info) for doc in docs if (info := self.info[doc]) is not None])


def _raised(value: float) -> float:
    """``value`` raised past any difference the order of a floating-point sum makes."""
    return value * _MARGIN + 1e-12


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
