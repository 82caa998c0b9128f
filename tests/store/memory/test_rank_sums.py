"""The ranked search's arithmetic (:mod:`store.memory._rank_sums`) against plain Python.

For random lists (each entry once in a list), weights, bounds and lists read whole or not,
:func:`prefix_sums` answers every entry of the lists once, its sum to the bit of the sum taken
one list after another in the terms' order, whether every open list holds it, and an upper bound
within rounding of the sum plus the bounds of the open lists it is missing from; it leaves its
reused arrays all zero. Queries of many terms (more open lists than a byte of marks holds) are
drawn too, and :func:`block_arrays` reads packed blocks back exactly.
"""

from __future__ import annotations

import math
from array import array

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from store.memory import _rank_sums
from store.memory._rank_blocks import pack
from store.memory._rank_sums import best_first, block_arrays, prefix_sums

_LIST = st.lists(
    st.tuples(st.integers(0, 300), st.floats(0.01, 5.0, allow_nan=False)),
    max_size=40,
    unique_by=lambda posting: posting[0],
)
_TERMS = st.lists(
    st.tuples(_LIST, st.floats(0.01, 9.0), st.floats(0.0, 5.0), st.booleans()), min_size=1, max_size=20
)


def _arrays(postings: list[tuple[int, float]]) -> tuple[np.ndarray, np.ndarray]:
    return np.array([doc for doc, _ in postings], np.int64), np.array([value for _, value in postings])


@settings(max_examples=300, deadline=None)
@given(terms=_TERMS)
def test_each_entry_is_summed_to_the_bit_and_bounded_by_its_missing_lists(
    terms: list[tuple[list[tuple[int, float]], float, float, bool]],
) -> None:
    prefixes = [_arrays(postings) for postings, _, _, _ in terms]
    weights = [weight for _, weight, _, _ in terms]
    bounds = [bound for _, _, bound, _ in terms]
    whole = [done for _, _, _, done in terms]
    for _ in range(2):  # the second call reuses the first one's arrays
        found, lower, upper, exact = prefix_sums(prefixes, weights, bounds, whole)
        answers = {
            doc: (total, bound, flag)
            for doc, total, bound, flag in zip(
                found.tolist(), lower.tolist(), upper.tolist(), exact.tolist(), strict=True
            )
        }
        assert len(answers) == len(found)  # each entry once
        held = [dict(postings) for postings, _, _, _ in terms]
        assert set(answers) == {doc for lists in held for doc in lists}
        for doc, (total, bound, flag) in answers.items():
            expected = 0.0
            for lists, weight in zip(held, weights, strict=True):
                if doc in lists:
                    expected += weight * lists[doc]  # the ranking function's sum, in its order
            assert total == expected, doc
            missing = [
                weight * limit
                for lists, weight, limit, done in zip(held, weights, bounds, whole, strict=True)
                if not done and doc not in lists
            ]
            assert flag == (not missing)
            assert math.isclose(bound, expected + sum(missing), rel_tol=1e-12, abs_tol=1e-12)
        assert not _rank_sums._SCRATCH.total.any()  # left all zero for the next walk
        assert not any(mask.any() for mask in _rank_sums._SCRATCH.masks)


@settings(max_examples=100, deadline=None)
@given(terms=_TERMS, first=st.integers(1, 8))
def test_entries_come_best_bound_first(
    terms: list[tuple[list[tuple[int, float]], float, float, bool]], first: int
) -> None:
    prefixes = [_arrays(postings) for postings, _, _, _ in terms]
    found, lower, upper, exact = prefix_sums(
        prefixes, [w for _, w, _, _ in terms], [b for _, _, b, _ in terms], [d for _, _, _, d in terms]
    )
    entries = list(zip(upper.tolist(), found.tolist(), lower.tolist(), exact.tolist(), strict=True))
    handed = list(best_first(found, lower, upper, exact, first))
    assert sorted(handed) == sorted(entries)  # each entry once, as prefix_sums answered it
    bounds = [bound for bound, _, _, _ in handed]
    assert bounds == sorted(bounds, reverse=True)


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    size=st.integers(0, 12_000),
    distinct=st.sampled_from([1, 3, 50, 10**9]),
    first=st.integers(1, 300),
)
def test_batches_past_the_sample_still_come_best_first_each_entry_once(
    seed: int, size: int, distinct: int, first: int
) -> None:
    # large enough that the threshold is placed from a sample, and bounds that tie a lot (a few
    # distinct values) or not at all: every entry handed once, best bound first
    rng = np.random.default_rng(seed)
    upper = rng.integers(0, distinct, size).astype(np.float64) / 7.0
    docs = rng.permutation(size).astype(np.int64)
    lower, exact = upper / 2, rng.integers(0, 2, size).astype(np.bool_)
    handed = list(best_first(docs, lower, upper, exact, first))
    assert sorted(doc for _, doc, _, _ in handed) == list(range(size))
    bounds = [bound for bound, _, _, _ in handed]
    assert bounds == sorted(bounds, reverse=True)
    columns = zip(docs.tolist(), upper.tolist(), lower.tolist(), exact.tolist(), strict=True)
    by_doc = {doc: (bound, value, flag) for doc, bound, value, flag in columns}
    assert all(by_doc[doc] == (bound, value, flag) for bound, doc, value, flag in handed)


@given(st.lists(_LIST.filter(bool), max_size=6))
def test_packed_blocks_read_back_exactly(blocks: list[list[tuple[int, float]]]) -> None:
    data = [pack(array("d", [v for _, v in block]), array("q", [d for d, _ in block])) for block in blocks]
    impacts, docs = block_arrays(data)
    assert impacts.tolist() == [value for block in blocks for _, value in block]
    assert docs.tolist() == [doc for block in blocks for doc, _ in block]


@settings(max_examples=300, deadline=None)
@given(terms=_TERMS, data=st.data())
def test_sums_kept_across_rounds_are_exact_only_where_added_in_the_terms_order(
    terms: list[tuple[list[tuple[int, float]], float, float, bool]], data: st.DataObject
) -> None:
    """:class:`RoundSums`: each list's postings added over up to three rounds (a prefix read
    deeper each time), the answer after every round against plain Python: every entry once; an
    entry whose postings were added in the terms' order summed to the bit and exact exactly when
    no open list misses it; one summed out of that order never exact, its sum and bound within
    rounding; the thread's arrays all zero after :meth:`~RoundSums.clear`."""
    weights = [weight for _, weight, _, _ in terms]
    bounds = [bound for _, _, bound, _ in terms]
    whole = [done for _, _, _, done in terms]
    cuts = [
        sorted(data.draw(st.lists(st.integers(0, len(p)), min_size=2, max_size=2))) for p, _, _, _ in terms
    ]
    sums = _rank_sums.RoundSums(weights)
    added: dict[int, list[tuple[int, int]]] = {}  # entry: (round, list) of each of its postings, in order
    try:
        for round_ in range(3):
            for index, (postings, _, _, _) in enumerate(terms):
                start = 0 if round_ == 0 else cuts[index][round_ - 1]
                stop = cuts[index][round_] if round_ < 2 else len(postings)
                sums.add(index, *_arrays(postings[start:stop]))
                for doc, _ in postings[start:stop]:
                    added.setdefault(doc, []).append((round_, index))
            found, lower, upper, exact = sums.result(bounds, whole)
            values = zip(lower.tolist(), upper.tolist(), exact.tolist(), strict=True)
            answers = dict(zip(found.tolist(), values, strict=True))
            assert len(answers) == len(found) and set(answers) == set(added)
            held = [dict(postings) for postings, _, _, _ in terms]
            for doc, (total, bound, flag) in answers.items():
                lists = [index for _, index in added[doc]]
                in_order = lists == sorted(lists)
                expected = 0.0
                for index in sorted(lists):
                    expected += weights[index] * held[index][doc]
                missing = [
                    weights[i] * bounds[i] for i in range(len(terms)) if not whole[i] and i not in lists
                ]
                assert flag == (in_order and not missing), doc
                if in_order:
                    assert total == expected, doc
                assert math.isclose(total, expected, rel_tol=1e-12, abs_tol=1e-12)
                assert math.isclose(bound, expected + sum(missing), rel_tol=1e-12, abs_tol=1e-12)
    finally:
        sums.clear()
    assert not _rank_sums._SCRATCH.total.any()
    assert not any(mask.any() for mask in _rank_sums._SCRATCH.masks)
