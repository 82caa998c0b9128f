"""``memory.query`` ``match: "ranked"`` from the impact-ordered index, on both backends.

The ranking is :mod:`store.memory._rank`'s function; this module finds its best entries without
scoring every match. Every term has a list of every entry holding it, best impact first
(:mod:`._rank_index`), stored in packed blocks (:mod:`._rank_blocks`). The search reads a
**prefix** of each query term's list (at least :data:`DEPTH` postings, whole blocks, one ordered
read of a few rows each) into two numpy arrays per term; no statement groups or sorts them.
An entry left out of a prefix has an impact of at most the last one read: the prefix's
**bound** (0 once the list is read whole: the entry does not hold the term). An entry's **upper
bound** is its impacts in the prefixes plus, for each term whose prefix it is not in, that
term's bound, summed and raised by :func:`_raised`. Every entry of the prefixes gets its sum
and its upper bound in a few vectorised passes (:class:`~store.memory._rank_sums.RoundSums`,
which keeps the sums of a shallower read and adds only the deeper postings),
and they are handed out best upper bound first, sorted a batch at a time
(:func:`~store.memory._rank_sums.best_first`). They are settled :data:`BLOCK` at a time: the
exact score is the sum when every term is in the entry's prefixes or its list is whole, else it
is read from the entry's stored terms (one read of those rows, no JSON parsing, a **probe**);
the filters (and whether it is a summary) are read best first (``memory_rank_info``, a narrow
row an entry), only until the last place is known; under a scope or kind filter an entry to
be probed has its filters read first, and is probed only if it passes. It stops as soon as
``limit`` settled entries that count (pass the filters, are not summaries) score above the next
upper bound and above what an entry in no prefix at all may score (every term at its bound): no
entry left can reach the last place, ties included. An early stop that drops a better entry
would need an upper bound below a score, which the lists' order rules out
(``tests/store/memory/test_memory_ranked.py`` tries to make one).

When the prefixes cannot settle it (an entry in no prefix could place, or fewer than ``limit``
entries count: filters that pass few entries, impacts that tie past the prefix), or its probes
have cost more than reading deeper would (:data:`PROBE_COST`: common terms, whose prefixes'
bounds stay near their heads; deeper bounds rule those entries out for less), each prefix not
yet whole is read :data:`GROWTH` times as deep and the walk runs again, keeping the scores and
filters it settled; once every list is whole it always settles, so no query scores every match
for want of a list. ``limit`` 0 reads the lists whole and scores every match from them. A scope
filter reaching fewer than :data:`NARROW` entries is answered by scoring those entries from
their stored terms (:func:`_evaluate`): the same function, the same numbers. While entries
written before the index wait in ``memory_rank_backlog``, the query is answered by
:func:`~store.memory._rank.reference_ranking` over the entries' text.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from store.memory import _rank_blocks
from store.memory._rank import idf, impact, query_terms, reference_ranking, score
from store.memory._rank_index import RANK_PENDING
from store.memory._rank_sums import (
    POSTING_BYTES,
    Docs,
    Impacts,
    RoundSums,
    best_first,
    block_arrays,
)
from store.memory._search import MemoryFilter, reach_probe

__all__ = ["BLOCK", "DEPTH", "GROWTH", "NARROW", "PROBE_COST", "ranked_ids"]

BLOCK = 64
"""Entries of the prefixes settled at a time, best upper bound first."""

DEPTH = 8_192
"""Postings of each list read first, at least (whole blocks; a shorter list is read whole). A
posting read and summed costs ~1/250 of a probe, so the first read is deep: on the benchmark's
realistic corpus it settles most queries of two or three terms at ``limit`` 10 in one round
(2,048 left three common words probing ~300 entries and reading again)."""

GROWTH = 2
"""How many times deeper a prefix is read when the walk cannot stop.

A scope or kind filter starts the walk one step deeper, at ``DEPTH * GROWTH``: such a walk settles
candidates until ``limit`` of them pass, several times as many as an unfiltered one, and at
:data:`DEPTH` its prefixes' bounds stay too high to settle them from the lists, so its first
round ran out of probes and read again (every filtered row of the benchmark at 1,000,000
entries). Starting where that second round starts took the ``scope=project`` and grant rows
there to x0.50-0.72 of the two rounds; at 100,000 entries, where the first read holds ~40% of a
common term's list and already settled them, one such row paid x1.30 (2.6 -> 3.4 ms)."""

PROBE_COST = 250
"""What settling one entry from its stored terms costs (two random row reads, ~15-40 us), in
postings read and summed (~0.1 us each, in numpy). A walk whose probes have cost more than
reading its open prefixes :data:`GROWTH` times as deep reads deeper instead: the deeper bounds
settle most of those entries from the lists."""

NARROW = 2_000
"""A scope filter reaching fewer rows than this is answered by evaluating those rows directly."""

_CHUNK = 500
"""Entries bound per ``IN (...)`` list."""

_MARGIN = 1.0 + 1e-9
"""Upper bounds are raised by this factor: a sum taken in another order may round lower."""

Key = tuple[bool, float, int, str]  # is a summary, -score, -importance, id: the contract's order


def ranked_ids(conn: Any, text: str, filters: MemoryFilter) -> list[tuple[str, float]]:
    """``(id, score)`` of the entries ``memory.query`` ranks for ``text`` (which holds a term)."""
    terms = query_terms(text)
    if conn.execute(RANK_PENDING).fetchone() is not None:
        return _reference(conn, text, filters)
    marks = ", ".join("?" * (len(terms) + 1))
    sql = f"SELECT term, df FROM memory_rank_terms WHERE term IN ({marks})"
    df = {row[0]: int(row[1]) for row in conn.execute(sql, ["", *terms])}
    present = [term for term in terms if df.get(term, 0) > 0]
    if not present:
        return []
    weights = [idf(df[term], df.get("", 0)) for term in present]
    if filters.scope is None and filters.allowed_scopes == frozenset():
        return []  # no scope at all is allowed
    probe = reach_probe(filters, NARROW)
    if probe is not None and int(conn.execute(*probe).fetchone()[0]) < NARROW:
        return _evaluate(conn, present, weights, filters)
    walk = _Walk(conn, present, weights, filters)
    try:
        if filters.limit <= 0:
            return walk.everything()
        depth = DEPTH * GROWTH if walk.narrowed else DEPTH  # a filter starts deeper: see GROWTH
        while (found := walk.run(depth)) is None:
            depth *= GROWTH
        return found
    finally:
        walk.sums.clear()


class _Walk:
    """One top-``limit`` search over the lists of ``terms`` (see the module docstring)."""

    def __init__(self, conn: Any, terms: list[str], weights: list[float], filters: MemoryFilter):
        self.conn, self.terms, self.weights, self.filters = conn, terms, weights, filters
        self.sums = RoundSums(weights)  # the prefixes' sums, kept from one depth to the next
        self.counts = [0] * len(terms)  # postings read of each list
        self.blocks = [0] * len(terms)  # blocks read of each list
        self.whole = [False] * len(terms)
        self.bounds = [0.0] * len(terms)
        self.exact: dict[int, float] = {}  # exact, so kept from one depth to the next
        self.info: dict[int, tuple[bool, int, str] | None] = {}  # None: fails the filters
        self.kth: float | None = None
        self.probed = 0  # entries of this depth settled from their stored terms (or ruled out)
        self.best: list[int] = []  # the settled entries that count and may place, best first
        # whether the filters pass a fraction of the entries (stale ones are few)
        narrowing = (filters.scope, filters.allowed_scopes, filters.kind)
        self.narrowed = any(value is not None for value in narrowing)

    def _read(self, depth: int) -> None:
        """Extend every prefix not yet whole to at least ``depth`` postings, whole blocks at a time
        (as many blocks as the list's blocks so far suggest: they hold from a few postings to
        :data:`~store.memory._rank_blocks.MOST`), decoded together."""
        for index, term in enumerate(self.terms):
            read: list[bytes] = []
            count = self.counts[index]
            while not self.whole[index] and count < depth:
                per_block = count // self.blocks[index] if self.blocks[index] else _rank_blocks.SIZE
                wanted = (depth - count) // max(per_block, 1) + 3  # blocks vary: a read, not four
                more = _rank_blocks.read_blocks(self.conn, term, wanted, self.blocks[index])
                read += more
                count += sum(map(len, more)) // POSTING_BYTES
                self.blocks[index] += len(more)
                self.whole[index] = len(more) < wanted
            if read:
                impacts, docs = block_arrays(read)
                self.sums.add(index, docs, impacts)
                self.counts[index] = count
                if len(impacts):
                    self.bounds[index] = float(impacts[-1])
            if self.whole[index]:
                self.bounds[index] = 0.0

    def _sums(self) -> tuple[Docs, Impacts, Impacts, NDArray[np.bool_]]:
        return self.sums.result(self.bounds, self.whole)

    def everything(self) -> list[tuple[str, float]]:
        """Every match that passes the filters, in order, scored from the whole lists."""
        self._read(_REST)
        found, lower, _, _ = self._sums()
        self.exact.update(zip(found.tolist(), lower.tolist(), strict=True))
        return self._ordered(list(self.exact))

    def run(self, depth: int) -> list[tuple[str, float]] | None:
        """The answer from prefixes of ``depth`` postings, or ``None`` when they cannot settle it."""
        self._read(depth)
        self._restart()
        # postings the open prefixes would hold read GROWTH times as deep: what probing is held to
        deeper = sum(
            GROWTH * count for count, whole in zip(self.counts, self.whole, strict=True) if not whole
        )
        limit = self.filters.limit
        unseen = _raised(score(self.weights, [bound or None for bound in self.bounds]))  # in no prefix
        candidates = best_first(*self._sums(), 4 * BLOCK)
        while chunk := list(itertools.islice(candidates, BLOCK)):
            if self.kth is not None and _raised(chunk[0][0]) < self.kth:
                break  # no entry left in the prefixes can reach the last place
            if _raised(chunk[0][0]) < unseen and (self.kth is None or self.kth <= unseen):
                return None  # the rest cannot lift the last place above an entry in no prefix
            self._settle([entry for entry in chunk if self.kth is None or _raised(entry[0]) >= self.kth])
            if self.probed * PROBE_COST > deeper and not all(self.whole):
                return None  # reading deeper settles the rest from the lists, for less
        if self.kth is not None and self.kth > unseen:
            return self._ordered(self.best)[:limit]
        if not all(self.whole):
            return None  # an entry past a prefix, or in no prefix, could still place
        everything = list(self.exact)  # every list whole: every match settled
        return self._ordered([doc for doc in everything if self.info[doc] is not None])[:limit]

    def _restart(self) -> None:
        """Forget the last place and the best of a shallower walk (its scores stay)."""
        self.kth, self.best, self.probed = None, [], 0

    def _settle(self, entries: list[tuple[float, int, float, bool]]) -> None:
        """The exact scores of ``entries`` (``(upper bound, doc, sum in the prefixes, whether that
        sum is exact)``): the sum when it is, else from their stored terms; then the filters of
        those that may place."""
        docs, probe = [], []
        for _, doc, lower, exact in entries:
            docs.append(doc)
            if doc in self.exact:
                continue  # settled at a shallower depth
            if exact:
                self.exact[doc] = lower
            else:
                probe.append(doc)
        # counted before the filters, so that the walk reads deeper when it did: when its probes
        # would have cost more than reading deeper (PROBE_COST)
        self.probed += len(probe)
        if probe and self.narrowed:
            # A scope or kind filter passes a fraction of the entries: the filters of those to
            # probe are read first (one narrow row each, a third of a probe's two random reads),
            # and only those that pass are probed (kind=constraint at 1,000,000 entries: x0.7).
            self._fetch(probe)
            failing = {doc for doc in probe if self.info[doc] is None}
            probe = [doc for doc in probe if doc not in failing]
            docs = [doc for doc in docs if doc not in failing]
        if probe:
            self._probe(probe)
        # the filters are read best first, a few at a time, until the last place is known: most
        # entries of a chunk score below it and never need theirs
        limit, best = self.filters.limit, self.best
        scored, group, start = sorted(docs, key=self._rank), max(limit, 8), 0
        while start < len(scored) and (self.kth is None or self.exact[scored[start]] >= self.kth):
            part = scored[start : start + group]
            self._fetch(part)
            best = sorted([*best, *(doc for doc in part if self._counts(doc))], key=self._rank)
            if len(best) >= limit:
                self.kth = self.exact[best[limit - 1]]
                best = [doc for doc in best if self.exact[doc] >= self.kth]  # the limit-th and its ties
            start, group = start + group, 2 * group
        self.best = best

    def _rank(self, doc: int) -> tuple[float, int]:
        return -self.exact[doc], doc

    def _counts(self, doc: int) -> bool:
        """Whether ``doc`` passes the filters and is not a summary."""
        info = self.info.get(doc)
        return info is not None and not info[0]

    def _probe(self, docs: list[int]) -> None:
        """The exact scores of ``docs`` from their stored terms (every term looked for: an entry
        holds a term in its stored terms exactly when it is in that term's list, at the impact
        computed here, ``impact(tf, length)``, to the bit)."""
        terms = list(zip(_keys(self.terms), self.weights, strict=True))
        sql = f"SELECT doc, length, terms FROM memory_rank_docs WHERE doc IN ({_marks(len(docs))})"
        exact = self.exact
        for doc, length, stored in self.conn.execute(sql, docs):
            # score(weights, impacts) inlined: the same sum in the same order, without the lists
            total, length = 0.0, int(length)
            for key, weight in terms:
                tf = _count(stored, key)
                if tf is not None:
                    total += weight * impact(tf, length)
            exact[int(doc)] = total

    def _fetch(self, docs: Sequence[int]) -> None:
        """Whether each of ``docs`` passes the filters, and whether it is a summary, its importance
        and its ID."""
        # in entry order: a chunk's rows are then neighbours in the table (every match of a
        # common term, ``limit`` 0, reads ~x1.1 faster than in the lists' order)
        wanted = sorted(doc for doc in docs if doc not in self.info)
        passes = self.filters.passes
        for start in range(0, len(wanted), _CHUNK):
            chunk = wanted[start : start + _CHUNK]
            self.info.update(dict.fromkeys(chunk))  # None unless its row is found and passes
            for doc, summary, importance, entry_id, scope, kind, status in self.conn.execute(
                _INFO.format(_marks(len(chunk))), chunk
            ):
                found = passes(scope, kind, status)
                self.info[int(doc)] = (bool(summary), int(importance), str(entry_id)) if found else None

    def _ordered(self, docs: list[int]) -> list[tuple[str, float]]:
        self._fetch(docs)
        return _ordered([(self.exact[doc], info) for doc in docs if (info := self.info[doc]) is not None])


_INFO = "SELECT doc, summary, importance, id, scope, kind, status FROM memory_rank_info WHERE doc IN ({})"
"""An entry's place in the order and its filtered columns, by key, from the narrow table the
triggers of migration 0015 keep equal to the entries' columns (one B-tree descent an entry where
the join through ``memory_entries``' ID index took three): the filters are tested in Python
(:meth:`~store.memory._search.MemoryFilter.passes`), so no planner reads by scope instead."""
_REST = 2**62
"""A ``LIMIT`` past any list's end: the rest of it (both backends read it alike)."""


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
