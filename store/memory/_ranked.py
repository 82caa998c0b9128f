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
for want of a list. Before settling anything a depth is **planned** (:meth:`_Walk._plan`): when
fewer than ``limit`` sums in the prefixes reach what an entry in no prefix may score, the walk
reads deeper at once (probing there finds entries that cannot place: three common words, whose
best entries hold all three but are long, probed 255 and then 448 entries at their first two
depths at 1,000,000 entries, and read again each time). A walk reading again also takes a
**floor** (the ``limit``-th best sum of entries that count: a sum of some of an entry's terms is
at most its score), counts the entries whose bound reaches it and whose score is unknown, and,
when settling them would cost more probes than the walk allows itself, reads where the same
entries' bounds (the block keys one or two steps deeper, an index-only read) leave the fewest
postings and probes to pay. Only the speed depends on the plan: any depth settles the same
answer. ``limit`` 0 reads the lists whole and scores every match from them. A scope filter
reaching fewer than :data:`NARROW` entries is answered by scoring those entries from their
stored terms (:func:`~store.memory._rank_direct.evaluate`): the same function, the same numbers.
While entries written before the index wait in ``memory_rank_backlog``, the query is answered by
:func:`~store.memory._rank.reference_ranking` over the entries' text.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any, TypeVar

import numpy as np

from store.memory import _rank_blocks
from store.memory._rank import idf, impact, query_terms, score
from store.memory._rank_direct import evaluate, ordered, reference, stored_count, term_keys
from store.memory._rank_index import RANK_PENDING
from store.memory._rank_sums import (
    POSTING_BYTES,
    Impacts,
    RoundSums,
    Sums,
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

_FLOOR_READ = 4
"""Entries read per place, best sums first, to find the floor of a plan (:meth:`_Walk._plan`)."""

_CHUNK = 500
"""Entries bound per ``IN (...)`` list."""

_MARGIN = 1.0 + 1e-9
"""Upper bounds are raised by this factor: a sum taken in another order may round lower."""

_Value = TypeVar("_Value", float, Impacts)


def ranked_ids(conn: Any, text: str, filters: MemoryFilter) -> list[tuple[str, float]]:
    """``(id, score)`` of the entries ``memory.query`` ranks for ``text`` (which holds a term)."""
    terms = query_terms(text)
    if conn.execute(RANK_PENDING).fetchone() is not None:
        return reference(conn, text, filters)
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
        return evaluate(conn, present, weights, filters)
    walk = _Walk(conn, present, weights, filters, [df[term] for term in present])
    try:
        if filters.limit <= 0:
            return walk.everything()
        depth = DEPTH * GROWTH if walk.narrowed else DEPTH  # a filter starts deeper: see GROWTH
        while (found := walk.run(depth)) is None:
            depth = walk.next_depth
        return found
    finally:
        walk.sums.clear()


class _Walk:
    """One top-``limit`` search over the lists of ``terms`` (see the module docstring)."""

    def __init__(
        self, conn: Any, terms: list[str], weights: list[float], filters: MemoryFilter, lengths: list[int]
    ):
        self.conn, self.terms, self.weights, self.filters = conn, terms, weights, filters
        self.lengths = lengths  # postings of each list (its term's df)
        self.sums = RoundSums(weights)  # the prefixes' sums, kept from one depth to the next
        self.counts = [0] * len(terms)  # postings read of each list
        self.blocks = [0] * len(terms)  # blocks read of each list
        self.whole = [False] * len(terms)
        self.bounds = [0.0] * len(terms)
        self.exact: dict[int, float] = {}  # exact, so kept from one depth to the next
        self.info: dict[int, tuple[bool, int, str] | None] = {}  # None: fails the filters
        self.kth: float | None = None
        self.next_depth = 0  # where to read next when a depth cannot settle it (run)
        self.rounds = 0  # depths read so far
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

    def _sums(self) -> Sums:
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
        self.next_depth = depth * GROWTH
        sums = self._sums()
        self.rounds += 1
        if not all(self.whole) and (planned := self._plan(depth, sums, unseen, deeper)) is not None:
            self.next_depth = planned
            return None
        candidates = best_first(*sums, 4 * BLOCK)
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

    def _plan(self, depth: int, sums: Sums, unseen: float, budget: int) -> int | None:
        """``None`` to settle at ``depth``, or the depth to read first (see the module docstring).

        First, whether ``limit`` sums in the prefixes reach ``unseen`` (what an entry in no prefix
        may score): at the first depth from the sums alone (a bound above the floor, for the
        price of a partial sort), at a later one from the floor. Then, at a later depth, when
        settling the entries that may place could cost more probes than ``budget`` allows, the
        cheapest of settling here and reading one or two steps deeper, in postings read plus
        :data:`PROBE_COST` for each entry that would still have to be settled there."""
        lower, limit = sums[1], self.filters.limit
        if self.rounds == 1:  # nothing settled yet: the sums are all there is to go on
            if len(lower) >= limit and unseen >= float(np.partition(lower, -limit)[-limit]):
                return depth * GROWTH  # no limit sums reach what an entry in no prefix may score
            return None  # the rest of a plan is paid for only by a walk reading again
        floor = self._floor(sums)
        if floor is None:
            return None  # too few entries that count among the best sums: settle as before
        if unseen >= floor:
            return depth * GROWTH  # an entry in no prefix may place: the lists cannot settle it here
        found, _, upper, exact = sums
        open_docs = found[~exact & (_raised(upper) >= floor)]  # may place, score unknown
        if self.exact:  # settled at a shallower depth
            open_docs = open_docs[~np.isin(open_docs, np.fromiter(self.exact, np.int64, len(self.exact)))]
        best_cost, best_depth = PROBE_COST * len(open_docs), None
        if best_cost <= budget:
            return None  # settling here stays within what probing is held to
        for deeper in (depth * GROWTH, depth * GROWTH * GROWTH):
            bounds, read = self._bounds_at(deeper)
            uppers = self.sums.uppers(open_docs, bounds, self.whole)
            cost = read + PROBE_COST * int(np.count_nonzero(_raised(uppers) >= floor))
            if cost < best_cost:
                best_cost, best_depth = cost, deeper
        return best_depth

    def _floor(self, sums: Sums) -> float | None:
        """A score the ``limit``-th entry that counts reaches at least, lowered past rounding: the
        ``limit``-th best of their sums in the prefixes (a sum of some of an entry's terms is at
        most its score); ``None`` when the first :data:`_FLOOR_READ` times ``limit`` entries by
        sum hold fewer that count."""
        found, lower, _, exact = sums
        limit = self.filters.limit
        best = list(itertools.islice(best_first(found, lower, lower, exact, 2 * limit), _FLOOR_READ * limit))
        self._fetch([doc for _, doc, _, _ in best])
        values = [self.exact.get(doc, value) for value, doc, _, _ in best if self._counts(doc)]
        return None if len(values) < limit else (sorted(values)[-limit] - 1e-12) / _MARGIN

    def _bounds_at(self, depth: int) -> tuple[list[float], int]:
        """Each list's bound were its prefix ``depth`` postings long (from the block keys: no block
        is read), and the postings reading that deep would read."""
        bounds, read = [], 0
        for index, term in enumerate(self.terms):
            if self.whole[index]:
                bounds.append(0.0)
                continue
            blocks = -(-depth * self.blocks[index] // max(self.counts[index], 1))  # as _read would
            bounds.append(_rank_blocks.bound_after(self.conn, term, blocks) or 0.0)
            read += min(depth, self.lengths[index]) - self.counts[index]
        return bounds, read

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
        terms = list(zip(term_keys(self.terms), self.weights, strict=True))
        sql = f"SELECT doc, length, terms FROM memory_rank_docs WHERE doc IN ({_marks(len(docs))})"
        exact = self.exact
        for doc, length, stored in self.conn.execute(sql, docs):
            # score(weights, impacts) inlined: the same sum in the same order, without the lists
            total, length = 0.0, int(length)
            for key, weight in terms:
                tf = stored_count(stored, key)
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
        return ordered([(self.exact[doc], info) for doc in docs if (info := self.info[doc]) is not None])


_INFO = "SELECT doc, summary, importance, id, scope, kind, status FROM memory_rank_info WHERE doc IN ({})"
"""An entry's place in the order and its filtered columns, by key, from the narrow table the
triggers of migration 0015 keep equal to the entries' columns (one B-tree descent an entry where
the join through ``memory_entries``' ID index took three): the filters are tested in Python
(:meth:`~store.memory._search.MemoryFilter.passes`), so no planner reads by scope instead."""
_REST = 2**62
"""A ``LIMIT`` past any list's end: the rest of it (both backends read it alike)."""


def _marks(count: int) -> str:
    return ", ".join("?" * count)


def _raised(value: _Value) -> _Value:
    """``value`` (a bound, or an array of them) raised past any difference the order of a
    floating-point sum makes."""
    return value * _MARGIN + 1e-12
