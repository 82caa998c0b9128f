"""The ranked search's arithmetic over its prefixes, in numpy (:mod:`store.memory._ranked`).

A prefix is two arrays read out of its blocks' bytes at once (:func:`block_arrays`): impacts and
entry numbers. :func:`prefix_sums` adds every prefix into per-thread arrays indexed by entry
number and marks, a bit an open list in a byte an entry, which lists hold each entry, so each
posting costs a few vectorised operations (~0.1 us all told) where a dict per term cost ~0.3 us a
posting in Python and an entry settled from its stored terms costs two random row reads (~15-40
us). :func:`best_first` hands the entries out best upper bound first, sorting only as many as the
walk takes. Nothing here allocates an array a posting long that it can reuse instead: after a
scan of the table, a fresh array's page faults and a large random-access array's cache misses
cost more than the arithmetic (``benchmarks/bench_memory.py`` times each query between scans).

Exactness: :func:`~store.memory._rank.score` adds ``weight * impact`` to a total starting at 0,
in the terms' order, for the terms an entry holds. ``np.add.at`` over one list adds each entry's
``weight * impact`` (the same IEEE multiplication) to its total once (an entry is once in a
list), list after list in the terms' order: the same additions in the same order, so the same
double, bit for bit (the property tests hold the walk to the reference to the bit).
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
    "best_first",
    "block_arrays",
    "prefix_sums",
]

Impacts = NDArray[np.float64]
Docs = NDArray[np.int64]
Flags = NDArray[np.bool_]
Marks = NDArray[np.uint8]

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
"""Bit 0 of an entry's first mask: it is in some prefix. Bit ``k`` (from 1 on, :data:`_WIDTH` a
mask) is the ``k``-th open list: the entry is in that list's prefix."""

_WIDTH = 8
"""Bits of a mask: one byte an entry, so a query's marks stay in a few cache-resident pages."""


class _Scratch(threading.local):
    """A thread's arrays, reused from one walk to the next: indexed by entry number, the sums and
    the masks (all zero between walks); indexed by posting, room for one list's weighted impacts,
    for the answer, and a spare for its temporaries. A fresh array's pages are faulted in by its
    first writes, and after a scan of the table an array a walk allocates costs more than its
    arithmetic; the per-entry arrays are random-access, so they are kept small (9 bytes an entry
    for up to 7 open lists)."""

    def __init__(self) -> None:
        self.total, self.masks = np.zeros(0), list[Marks]()
        self.values, self.lower, self.upper, self.spare = (np.zeros(0) for _ in range(4))
        self.found = np.zeros(0, np.int64)

    def entries(self, size: int, words: int) -> tuple[Impacts, list[Marks]]:
        """The sums and ``words`` masks, at least ``size`` long, all zero."""
        if len(self.total) < size:
            size = max(size, 2 * len(self.total))
            self.total, self.masks = np.zeros(size), []
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
) -> tuple[Docs, Impacts, Impacts, Flags]:
    """Every entry of the prefixes (``(docs, impacts)`` of each term, in the terms' order): its
    number, the sum of its weighted impacts in them (:func:`~store.memory._rank.score`'s sum, to
    the bit), an upper bound of its score (that sum, plus each open list it is missing from at
    that list's bound; a sum taken in another order, so the caller raises it), and whether the
    sum is its exact score (every list it is missing from is whole). In no particular order; the
    first three are views of this thread's scratch arrays, valid until its next call."""
    top = 1 + max((int(docs.max()) for docs, _ in prefixes if len(docs)), default=-1)
    opened = [index for index, done in enumerate(whole) if not done]
    bit_of = {index: place + 1 for place, index in enumerate(opened)}  # bit 0 is _SEEN
    total, masks = _SCRATCH.entries(top, 1 + len(opened) // _WIDTH)
    _SCRATCH.postings(sum(len(docs) for docs, _ in prefixes))
    found = None
    try:
        fresh: list[Docs] = []  # each list's entries that no list before it holds
        for index, ((docs, impacts), weight) in enumerate(zip(prefixes, weights, strict=True)):
            if len(docs):
                np.add.at(total, docs, np.multiply(impacts, weight, out=_SCRATCH.values[: len(docs)]))
                before = _mark(masks[0], docs, _SEEN)
                fresh.append(docs[before == 0] if fresh else docs)
                if (bit := bit_of.get(index, 0)) > 0:
                    _mark(masks[bit // _WIDTH], docs, 1 << bit % _WIDTH)
        found = np.concatenate(fresh, out=_SCRATCH.found[: sum(map(len, fresh))]) if fresh else NO_DOCS
        lower = np.take(total, found, out=_SCRATCH.lower[: len(found)])
        upper = _SCRATCH.upper[: len(found)]
        np.copyto(upper, lower)
        exact = np.ones(len(found), np.bool_)
        open_bounds = [weights[index] * bounds[index] for index in opened]
        for word, mask in enumerate(masks):
            held = mask[found]
            missing, wanted = _missing(open_bounds, word)
            upper += np.take(missing, held, out=_SCRATCH.spare[: len(found)])
            exact &= (held & wanted) == wanted
    finally:  # the arrays are reused: leave them all zero, at the cost of what was touched
        for touched in [docs for docs, _ in prefixes] if found is None else [found]:
            total[touched] = 0.0
            for mask in masks:
                mask[touched] = 0
    return found, lower, upper, exact


def _mark(mask: Marks, docs: Docs, bits: int) -> Marks:
    """Set ``bits`` in ``docs``' masks; their masks before (a gather, an or and a scatter: ``np.
    bitwise_or.at`` takes three times as long, and each entry is once in a list)."""
    before = mask[docs]
    mask[docs] = before | np.uint8(bits)
    return before


def _missing(open_bounds: Sequence[float], word: int) -> tuple[Impacts, int]:
    """For each value of mask ``word``, the summed bounds of the open lists its bits say the entry
    is missing from; and the bits of every open list the word holds."""
    values = np.arange(1 << _WIDTH)
    missing, wanted = np.zeros(1 << _WIDTH), 0
    for bit in range(_WIDTH):
        place = word * _WIDTH + bit - 1  # bit 0 of the first word is _SEEN
        if 0 <= place < len(open_bounds):
            missing[(values & (1 << bit)) == 0] += open_bounds[place]
            wanted |= 1 << bit
    return missing, wanted


def best_first(
    docs: Docs, lower: Impacts, upper: Impacts, exact: Flags, first: int
) -> Iterator[tuple[float, int, float, bool]]:
    """``(upper bound, doc, sum, exact)`` of :func:`prefix_sums`' entries, best bound first, lazily:
    each batch is the best of the rest picked by a partial sort (linear; ties at its edge fall
    either side), the first ``first`` long and each four times the last, and sorted by bound then
    doc, so a walk that stops early sorts few."""
    left = np.arange(len(docs))
    size = max(first, 1)
    while len(left):
        if len(left) > size:
            parted = np.argpartition(-upper[left], size - 1)
            chosen, left = left[parted[:size]], left[parted[size:]]
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
