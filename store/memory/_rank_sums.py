"""The ranked search's arithmetic over its prefixes, in numpy (:mod:`store.memory._ranked`).

A prefix is two arrays read straight out of its blocks' bytes (:func:`block_arrays`): impacts
and entry numbers. :func:`prefix_sums` adds every prefix into per-thread arrays indexed by entry
number, so each posting costs a few vectorised operations (~0.1 us all told) where a dict per
term cost ~0.3 us a posting in Python and an entry settled from its stored terms costs two
random row reads (~15-40 us). :func:`best_first` hands the entries out best upper bound first,
sorting only as many as the walk takes.

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

__all__ = ["NO_DOCS", "NO_IMPACTS", "Docs", "Impacts", "best_first", "block_arrays", "prefix_sums"]

Impacts = NDArray[np.float64]
Docs = NDArray[np.int64]
Flags = NDArray[np.bool_]

NO_IMPACTS: Impacts = np.zeros(0)
NO_DOCS: Docs = np.zeros(0, np.int64)

_FLOAT, _INT = np.dtype("<f8"), np.dtype("<i8")  # a block's impacts and entry numbers, little-endian


def block_arrays(data: bytes) -> tuple[Impacts, Docs]:
    """A block's impacts and entry numbers (:func:`store.memory._rank_blocks.pack`'s layout), as
    read-only views of ``data`` (no copy; numpy swaps the bytes on a big-endian machine)."""
    size = len(data) // 16  # a float64 and an int64 a posting
    return np.frombuffer(data, _FLOAT, size), np.frombuffer(data, _INT, size, 8 * size)


class _Scratch(threading.local):
    """A thread's zeroed arrays indexed by entry number (sums, bounds replaced, open lists holding
    it, in a prefix at all), reused from one walk to the next: a fresh array's pages are faulted
    in by its first writes, which cost more than the walk's own arithmetic at 1,000,000 entries."""

    def __init__(self) -> None:
        self.total, self.gain = np.zeros(0), np.zeros(0)
        self.held, self.seen = np.zeros(0, np.int32), np.zeros(0, np.bool_)

    def arrays(self, size: int) -> tuple[Impacts, Impacts, NDArray[np.int32], Flags]:
        """The four arrays, at least ``size`` long, all zero."""
        if len(self.total) < size:
            size = max(size, 2 * len(self.total))
            self.total, self.gain = np.zeros(size), np.zeros(size)
            self.held, self.seen = np.zeros(size, np.int32), np.zeros(size, np.bool_)
        return self.total, self.gain, self.held, self.seen


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
    sum is its exact score (every list it is missing from is whole)."""
    top = 1 + max((int(docs.max()) for docs, _ in prefixes if len(docs)), default=-1)
    total, gain, held, seen = _SCRATCH.arrays(top)
    open_lists, found = 0, None
    try:
        for (docs, impacts), weight, bound, read_whole in zip(prefixes, weights, bounds, whole, strict=True):
            np.add.at(total, docs, weight * impacts)
            seen[docs] = True
            if not read_whole:
                np.add.at(gain, docs, weight * bound)  # the bound its impact in the prefix replaces
                held[docs] += 1  # (np.add.at casts a Python int per element: 30 times slower)
                open_lists += 1
        found = np.flatnonzero(seen[:top])
        lower, upper = total[found], gain[found]
        exact = held[found] == open_lists
    finally:  # the arrays are reused: leave them all zero, at the cost of what was touched
        for touched in [docs for docs, _ in prefixes] if found is None else [found]:
            total[touched], gain[touched], held[touched], seen[touched] = 0.0, 0.0, 0, False
    unseen = sum(
        weight * bound for weight, bound, done in zip(weights, bounds, whole, strict=True) if not done
    )
    np.subtract(unseen, upper, out=upper)  # the bounds of the open lists it is missing from
    upper += lower
    return found, lower, upper, exact


def best_first(
    docs: Docs, lower: Impacts, upper: Impacts, exact: Flags, first: int
) -> Iterator[tuple[float, int, float, bool]]:
    """``(upper bound, doc, sum, exact)`` of :func:`prefix_sums`' entries, best bound first (ties
    by doc), lazily: each batch is the best of the rest picked by a partial sort (linear), the
    first ``first`` long and each four times the last, so a walk that stops early sorts few."""
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
