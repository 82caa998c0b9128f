"""Abbreviated IDs, as git takes abbreviated hashes: :func:`store.resolve_id_prefix` on a real store."""

from __future__ import annotations

import pytest

from store import InvalidArgument, Store, resolve_id_prefix
from store._ids import MAX_CANDIDATES
from tests.store.work_helpers import new_task


def _resolve(store: Store, kind: str, text: str) -> str:
    return str(store.db.read(lambda conn: resolve_id_prefix(conn, kind, text)))


def test_a_unique_prefix_names_its_record_and_an_exact_id_itself(store: Store) -> None:
    first, second = new_task(store, "one"), new_task(store, "two")
    assert _resolve(store, "task", first.id) == first.id
    # The random suffix tells them apart: the whole ID but its last characters is unique.
    assert _resolve(store, "task", second.id[:-3]) == second.id
    assert _resolve(store, "task", first.id[:-3]) == first.id


def test_an_ambiguous_prefix_lists_at_most_the_cap_of_candidates(store: Store) -> None:
    ids = sorted(new_task(store, f"t{i}").id for i in range(MAX_CANDIDATES + 2))
    with pytest.raises(InvalidArgument, match="ambiguous") as raised:
        _resolve(store, "task", ids[0][:10])
    details = raised.value.details
    assert details["candidates"] == ids[:MAX_CANDIDATES] and details["truncated"] is True


def test_too_short_prefixes_are_refused_and_unmatched_ones_left_to_the_lookup(store: Store) -> None:
    task = new_task(store)
    with pytest.raises(InvalidArgument, match="too short"):
        _resolve(store, "task", "T-20")
    # Nothing starts with these: the caller's own lookup says not_found, as it always did.
    for text in ("T-1999", "T-nope", "not-an-id", "P-2026"):
        assert _resolve(store, "task", text) == text
    # LIKE wildcards match themselves: "%" and "_" would otherwise match every task.
    for text in ("T-2026%", "T-2026_", "T-%", "T-____"):
        assert _resolve(store, "task", text) == text
    assert _resolve(store, "task", task.id[:12]) == task.id
