"""The trigram index changes which rows ``memory.query`` reads, never what it answers.

For random Unicode entries and queries (case pairs that fold unlike ASCII, combining marks,
emoji, SQL and FTS5 syntax characters, quotes), the three routes -- the trigram index joined
(``indexed=True``), the scan (``indexed=False``) and the store's own choice, which on so few rows
reads the index's candidate rowids once and then those rows -- all answer exactly what the
contract's model (Python's ``lower()`` and ``count()``) says, entry for entry and in the same order.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from store import Store
from store.memory import MemoryEntry
from store.memory._query import search
from store.memory._search import MemoryFilter
from tests.store.memory.helpers import wipe_memory

# Letters whose lower() is longer, shorter or not ASCII's ('İ' -> 'i̇', 'ẞ' -> 'ß'), titlecase
# and final forms, a combining acute, emoji (one with a variation selector), the characters
# LIKE, GLOB and FTS5 give meaning to, both quotes, and the ones FTS5's UTF-8 reader treats alike.
_SPECIAL = [
    *"ßİIıiΣσςǄǆ%_*\"'()-+:^.aAbB \n\t",
    "\u1e9e",  # ẞ, whose lower() is ß
    "\u212a",  # the Kelvin sign, whose lower() is an ASCII k
    "\u01c5",  # ǅ, titlecase
    "\ufb01",  # the ligature fi
    "e\u0301",  # e and a combining acute
    "\U0001f600",  # an emoji
    "\U0001f3f3\ufe0f",  # an emoji with a variation selector
    "\ufffd",  # what FTS5 reads U+FFFE and U+FFFF as
    "\ufffe",
    "\uffff",
]
_PIECE = st.sampled_from(_SPECIAL) | st.characters(exclude_categories=("Cs", "Cc"))
_TEXT = st.lists(_PIECE, max_size=30).map("".join)
_ALIKE = str.maketrans({"\ufffd": "\ufffe", "\ufffe": "\uffff", "\uffff": "\ufffd"})
_LABEL = st.text(alphabet=st.sampled_from(list('abcAB_ -İß"%')), min_size=1, max_size=6)


def _nonblank(text: str) -> str:
    return text if text.strip() else text + "x"


_ENTRY = st.fixed_dictionaries(
    {
        "scope": _LABEL.map(_nonblank),
        "kind": st.sampled_from(["decision", "fact", "summary", "Summary", "SUMMARY", "note"]),
        "title": _TEXT.map(_nonblank),
        "body_md": _TEXT.map(_nonblank),
        "importance": st.integers(-3, 3),
    }
)


@st.composite
def _queries(draw: st.DrawFn, entries: list[dict[str, Any]]) -> str:
    """A slice of some stored field (maybe re-cased), or any text at all."""
    from_stored = draw(st.booleans())
    if entries and from_stored:
        entry = draw(st.sampled_from(entries))
        text: str = entry[draw(st.sampled_from(["title", "body_md", "scope", "kind"]))]
        start = draw(st.integers(0, len(text)))
        piece = text[start : start + draw(st.integers(1, 8))]
        # Re-cased, or with the characters FTS5 reads alike swapped: the index finds such rows as
        # candidates, and only the exact count may decide.
        alike = piece.translate(_ALIKE)
        return draw(st.sampled_from([piece, piece.upper(), piece.lower(), piece.swapcase(), alike]))
    return str(draw(_TEXT))


def _model(entries: list[dict[str, Any]], query: str) -> list[tuple[str, int]]:
    """The contract: (id, score) of every match, summaries last, by score, importance, then id."""
    needle = query.lower()
    found = []
    for entry in entries:
        fields = (entry["title"], entry["body_md"], entry["scope"], entry["kind"])
        score = sum(field.lower().count(needle) for field in fields) if needle else entry["importance"]
        if score > 0 or not needle:
            found.append((entry["kind"].lower() == "summary", -score, -entry["importance"], entry["id"]))
    return [(entry_id, -negated) for _, negated, _, entry_id in sorted(found)]


def _search(store: Store, query: str, filters: MemoryFilter, *, indexed: bool) -> list[MemoryEntry]:
    return store.db.read(lambda conn: search(conn, query, filters, indexed=indexed))


_reset = wipe_memory


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), entries=st.lists(_ENTRY, min_size=0, max_size=8))
def test_the_index_answers_exactly_what_the_scan_and_the_contract_answer(
    shared_store: Store, data: st.DataObject, entries: list[dict[str, Any]]
) -> None:
    store = shared_store
    _reset(store)
    stored = store.memory.record_many(entries, actor="tester") if entries else []
    recorded = [
        {name: getattr(entry, name) for name in ("id", "title", "body_md", "scope", "kind", "importance")}
        for entry in stored
    ]
    for _ in range(4):
        query = data.draw(_queries(recorded))
        limit = data.draw(st.sampled_from([0, 1, 3, 10]))
        scope = data.draw(st.sampled_from([None, *(e["scope"] for e in recorded)]))
        filters = MemoryFilter(scope, None, None, False, limit)
        indexed = _search(store, query, filters, indexed=True)
        scanned = _search(store, query, filters, indexed=False)
        chosen = store.memory.query(query, scope=scope, limit=limit)
        assert indexed == scanned == chosen, (query, scope, limit)
        model = _model([e for e in recorded if scope is None or e["scope"] == scope], query)
        assert [(e.id, e.score) for e in indexed] == (model[:limit] if limit > 0 else model), query
    # And the index holds exactly the stored rows, nothing stale.
    store.db.write(
        lambda conn: conn.execute(
            "INSERT INTO memory_trigram (memory_trigram, rank) VALUES ('integrity-check', 1)"
        )
    )
