"""The ranked search's arithmetic over its prefixes, in numpy (:mod:`store.memory._ranked`).

A prefix is two arrays read out of its blocks' bytes at once (:func:`block_arrays`): impacts and
entry numbers. :class:`RoundSums` adds each round's postings into per-thread arrays indexed by
entry number and marks, a bit a list in a byte an entry, which lists hold each entry, so each
posting costs a few vectorised operations (~0.1 us all told) where a dict per term cost ~0.3 us a
posting in Python and an entry settled from its stored terms costs two random row reads (~15-40
us). :func:`best_first` hands the entries out best upper bound first, sorting only as many as the
walk takes. Nothing here allocates an array a posting long that it can reuse instead: after a
scan of the table, a fresh array's page faults and a large random-access array's cache misses
cost more than the arithmetic (``benchmarks/bench_memory.py`` times each query between scans).

Exactness: :func:`~store.memory._rank.score` adds ``weight * impact`` to a total starting at 0,
in the terms' order, for the terms an entry holds. Adding one list's postings at their entries
(``total[docs] += ...``) adds each entry's ``weight * impact`` (the same IEEE multiplication) to
its total once (an entry is once in a list), list after list in the terms' order: the same
additions in the same order, so the same double, bit for bit (the property tests hold the walk
to the reference to the bit). A walk that reads deeper adds a list's deeper postings after the
later lists' first ones: an entry so summed out of order is marked and never answered as exact
(:class:`RoundSums`).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "NO_DOCS",
    "NO_IMPACTS",
    "POSTING_BYTES",
    "Docs",
    "Impacts",
    "RoundSums",
    "Sums",
    "best_first",
    "block_arrays",
    "prefix_sums",
]

Impacts = NDArray[np.float64]
Docs = NDArray[np.int64]
Flags = NDArray[np.bool_]
Marks = NDArray[np.uint8]
Sums = tuple[Docs, Impacts, Impacts, Flags]
"""Every entry of the prefixes: its number, its sum, its upper bound, whether the sum is exact."""

NO_IMPACTS: Impacts = np.zeros(0)
NO_DOCS: Docs = np.zeros(0, np.int64)

_FLOAT, _INT = np.dtype("<f8"), np.dtype("<i8")  # a block's impacts and entry numbers, little-endian
POSTING_BYTES = 16
"""Bytes of a posting in a block: a float64 impact and an int64 entry number."""


def block_arrays(blocks: Sequence[bytes]) -> tuple[Impacts, Docs]:
    """The impacts and entry numbers of consecutive blocks (:func:`store.memory._rank_blocks.pack`'s
    layout: each block's impacts, then its entry numbers), in order, as two arrays.

    The blocks are joined and read as one array of words, and every posting's two words gathered
    at once (posting ``p`` of a block whose first posting is the ``s``-th read has its impact at
    word ``p + s`` and its entry number ``n`` words on, for a block of ``n``): about half the
    time of a view of each block and a concatenation (44 against 80 us for 77 blocks of a common
    term). numpy swaps the bytes on a big-endian machine."""
    if len(blocks) == 1:  # two views, no copy
        size = len(blocks[0]) // POSTING_BYTES
        return np.frombuffer(blocks[0], _FLOAT, size), np.frombuffer(blocks[0], _INT, size, 8 * size)
    if not blocks:
        return NO_IMPACTS, NO_DOCS
    data = b"".join(blocks)
    sizes = np.fromiter(map(len, blocks), np.int64, len(blocks)) // POSTING_BYTES
    first = np.cumsum(sizes) - sizes  # postings before each block
    at = np.arange(len(data) // POSTING_BYTES) + np.repeat(first, sizes)  # each posting's impact, in words
    impacts = np.frombuffer(data, _FLOAT)[at]
    at += np.repeat(sizes, sizes)
    return impacts, np.frombuffer(data, _INT)[at]


_SEEN = 1
"""Bit 0 of an entry's first mask: it is in some prefix (bit 1 is :data:`_BROKEN`; bit ``i + 2``,
counting on over the masks, :data:`_WIDTH` bits a mask, is list ``i``: the entry is in its prefix)."""

_WIDTH = 8
"""Bits of a mask: one byte an entry, so a query's marks stay in a few cache-resident pages."""


class _Scratch(threading.local):
    """A thread's arrays, reused from one walk to the next: indexed by entry number, the sums and
    the masks (all zero between walks); indexed by posting, room for one list's weighted impacts,
    for the answer, and a spare for its temporaries. A fresh array's pages are faulted in by its
    first writes, and after a scan of the table an array a walk allocates costs more than its
    arithmetic; the per-entry arrays are random-access, so they are kept small (9 bytes an entry
    for up to 6 lists)."""

    def __init__(self) -> None:
        self.total, self.masks = np.zeros(0), list[Marks]()
        self.values, self.lower, self.upper, self.spare = (np.zeros(0) for _ in range(4))
        self.found = np.zeros(0, np.int64)

    def entries(self, size: int, words: int) -> tuple[Impacts, list[Marks]]:
        """The sums and ``words`` masks, at least ``size`` long: zero but where a walk still under
        way (:class:`RoundSums`) left its own, which a larger copy keeps."""
        if len(self.total) < size:
            size = max(size, 2 * len(self.total))
            total = np.zeros(size)
            total[: len(self.total)] = self.total
            masks = [np.zeros(size, np.uint8) for _ in self.masks]
            for mask, old in zip(masks, self.masks, strict=True):
                mask[: len(old)] = old
            self.total, self.masks = total, masks
        while len(self.masks) < words:
            self.masks.append(np.zeros(len(self.total), np.uint8))
        return self.total, self.masks[:words]

    def postings(self, size: int) -> None:
        """Room for ``size`` postings in the per-posting arrays."""
        if len(self.found) < size:
            size = max(size, 2 * len(self.found))
            self.values, self.lower, self.upper, self.spare = (np.empty(size) for _ in range(4))
            self.found = np.empty(size, np.int64)


_SCRATCH = _Scratch()


def prefix_sums(
    prefixes: Sequence[tuple[Docs, Impacts]],
    weights: Sequence[float],
    bounds: Sequence[float],
    whole: Sequence[bool],
) -> Sums:
    """Every entry of the prefixes (``(docs, impacts)`` of each term, in the terms' order): its
    number, the sum of its weighted impacts in them (:func:`~store.memory._rank.score`'s sum, to
    the bit), an upper bound of its score (that sum, plus each open list it is missing from at
    that list's bound; a sum taken in another order, so the caller raises it), and whether the
    sum is its exact score (every list it is missing from is whole). In no particular order; the
    first three are views of this thread's scratch arrays, valid until its next call."""
    sums = RoundSums(weights)
    try:
        for index, (docs, impacts) in enumerate(prefixes):
            sums.add(index, docs, impacts)
        return sums.result(bounds, whole)
    finally:  # the answer is in the per-posting arrays; the per-entry ones are left all zero
        sums.clear()


_BROKEN = 2
"""Bit 1 of a :class:`RoundSums` entry's first mask: its sum was not added in the terms' order."""


class RoundSums:
    """:func:`prefix_sums` for a walk that reads its prefixes deeper round after round: each round
    adds only the postings it read (:meth:`add`), where summing every prefix again cost a walk
    reading three times ~1.7 times the postings of its last prefixes.

    The sums are then no longer added list after list for every entry: an entry holding a later
    list's posting from an earlier round and an earlier list's from this one was summed out of
    the terms' order, which may round differently from the reference. Such an entry is marked
    (:data:`_BROKEN`) and never answered as exact: the walk settles it from its stored terms, as
    it does an entry missing from an open list. Its upper bound is a sum in another order, which
    the caller raises past rounding as it does every bound. Bit ``i + 2`` marks list ``i``'s
    prefix. The per-entry arrays stay this walk's until :meth:`clear`, which the walk must call
    (they are the thread's, reused by its next walk)."""

    def __init__(self, weights: Sequence[float]) -> None:
        self.weights = list(weights)
        self.words = 1 + (len(self.weights) + 1) // _WIDTH
        self.found: list[Docs] = []  # each add's entries no earlier add held
        self.count = 0

    def add(self, index: int, docs: Docs, impacts: Impacts) -> None:
        """Add list ``index``'s postings read this round (none of them added before)."""
        if not len(docs):
            return
        total, masks = _SCRATCH.entries(int(docs.max()) + 1, self.words)
        _SCRATCH.postings(len(docs))
        before = [mask[docs] for mask in masks]
        # the new entries are recorded before any write, so that clear() finds every entry written
        fresh = docs[(before[0] & _SEEN) == 0]
        self.found.append(fresh)
        self.count += len(fresh)
        # an entry is once in a list, so each total gets one addition: what ``np.add.at`` did, at a
        # third of its cost
        total[docs] += np.multiply(impacts, self.weights[index], out=_SCRATCH.values[: len(docs)])
        bit = index + 2
        later = [0] * self.words  # the bits of the lists after this one, in each mask
        for after in range(bit + 1, len(self.weights) + 2):
            later[after // _WIDTH] |= 1 << after % _WIDTH
        broken = np.zeros(len(docs), np.bool_)
        for word, bits in enumerate(later):
            if bits:
                broken |= (before[word] & bits) != 0
        first = before[0] | np.uint8(_SEEN)
        first[broken] |= np.uint8(_BROKEN)
        if bit < _WIDTH:
            first |= np.uint8(1 << bit)
        else:
            masks[bit // _WIDTH][docs] = before[bit // _WIDTH] | np.uint8(1 << bit % _WIDTH)
        masks[0][docs] = first

    def result(self, bounds: Sequence[float], whole: Sequence[bool]) -> Sums:
        """:func:`prefix_sums`' answer for every posting added so far (views of this thread's
        scratch, valid until its next call)."""
        if not self.count:
            return NO_DOCS, NO_IMPACTS, NO_IMPACTS, np.zeros(0, np.bool_)
        total, masks = _SCRATCH.entries(0, self.words)
        _SCRATCH.postings(self.count)
        found = np.concatenate(self.found, out=_SCRATCH.found[: self.count])
        lower = np.take(total, found, out=_SCRATCH.lower[: self.count])
        upper = _SCRATCH.upper[: self.count]
        np.copyto(upper, lower)
        bound_at = self._bound_at(bounds, whole)
        exact = np.ones(self.count, np.bool_)
        for word, mask in enumerate(masks):
            held = mask[found]
            missing, wanted = _missing(bound_at, word)
            upper += np.take(missing, held, out=_SCRATCH.spare[: self.count])
            exact &= (held & wanted) == wanted
            if word == 0:
                exact &= (held & _BROKEN) == 0
        return found, lower, upper, exact

    def uppers(self, docs: Docs, bounds: Sequence[float], whole: Sequence[bool]) -> Impacts:
        """The upper bounds of ``docs`` (entries added so far) as :meth:`result` would give them were
        the open lists' bounds ``bounds``: what reading deeper would leave them (a plan's estimate,
        over a few entries, so it leaves the per-posting scratch alone)."""
        total, masks = _SCRATCH.entries(0, self.words)
        upper: Impacts = total[docs]
        bound_at = self._bound_at(bounds, whole)
        for word, mask in enumerate(masks):
            upper += _missing(bound_at, word)[0][mask[docs]]
        return upper

    def _bound_at(self, bounds: Sequence[float], whole: Sequence[bool]) -> dict[int, float]:
        """Each open list's weighted bound, by its bit in the masks."""
        weights = self.weights
        return {index + 2: weights[index] * bounds[index] for index, done in enumerate(whole) if not done}

    def clear(self) -> None:
        """Leave the thread's per-entry arrays all zero again."""
        total, masks = _SCRATCH.entries(0, self.words)
        for part in self.found:
            total[part] = 0.0
            for mask in masks:
                mask[part] = 0
        self.found, self.count = [], 0


def _missing(bound_at: dict[int, float], word: int) -> tuple[Impacts, int]:
    """For each value of mask ``word``, the summed bounds of the open lists its bits say the entry
    is missing from (``bound_at``: an open list's weighted bound by its bit, counted over every
    mask); and the bits of every open list the word holds."""
    values = np.arange(1 << _WIDTH)
    missing, wanted = np.zeros(1 << _WIDTH), 0
    for bit in range(_WIDTH):
        bound = bound_at.get(word * _WIDTH + bit)
        if bound is not None:
            missing[(values & (1 << bit)) == 0] += bound
            wanted |= 1 << bit
    return missing, wanted


def best_first(
    docs: Docs, lower: Impacts, upper: Impacts, exact: Flags, first: int
) -> Iterator[tuple[float, int, float, bool]]:
    """``(upper bound, doc, sum, exact)`` of :func:`prefix_sums`' entries, best bound first, lazily.

    Each batch is every entry left whose bound is at or above a threshold, sorted by bound then
    doc: the threshold is placed in a sample of the bounds left (:func:`_threshold`), so that about
    twice the batch's wanted size lies above it, the first ``first`` and each four times the last.
    A sample and one comparison over the entries left cost a tenth of a partial sort of them
    (``argpartition``: ~1.4 ms over 100,000 bounds, where the walk stops after a few hundred);
    a batch that ties past four times its size is cut by a partial sort (ties at its edge then fall
    either side), so a walk that stops early sorts few."""
    left = np.arange(len(docs))
    size = max(first, 1)
    while len(left):
        if len(left) > 2 * size:
            values = upper[left]
            high = values >= _threshold(values, size)
            chosen, left = left[high], left[~high]
            if len(chosen) > 4 * size:  # ties: keep the batch a partial sort's size
                parted = np.argpartition(-upper[chosen], size - 1)
                chosen, left = chosen[parted[:size]], np.concatenate((chosen[parted[size:]], left))
        else:
            chosen, left = left, left[:0]
        chosen = chosen[np.lexsort((docs[chosen], -upper[chosen]))]
        yield from zip(
            upper[chosen].tolist(),
            docs[chosen].tolist(),
            lower[chosen].tolist(),
            exact[chosen].tolist(),
            strict=True,
        )
        size *= 4


_SAMPLE = 2_048
"""Bounds sampled to place a batch's threshold (every ``n // 2,048``-th of ``n`` left)."""


def _threshold(values: Impacts, size: int) -> float:
    """A bound at or below which about ``2 * size`` of ``values`` lie above, and at least one: the
    bound of that rank in an evenly spaced sample of them."""
    sample = values[:: max(1, len(values) // _SAMPLE)]
    rank = min(len(sample), 2 * -(-len(sample) * size // len(values)))  # the sample's share, twice
    return float(np.partition(sample, len(sample) - rank)[len(sample) - rank])
