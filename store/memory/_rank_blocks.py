"""The ranked search's lists stored in blocks (migration ``0014_memory_rank_blocks``).

A term's list (every entry holding it, best impact first, then by entry number) is cut into
**blocks** of consecutive postings, one row each of ``memory_rank_blocks``: ``data`` holds the
block's impacts (little-endian float64) then its entry numbers (little-endian int64), in the
list's order, and the row's key ``(term, impact, doc)`` is a posting at or before the block's
first one in that order. The blocks' keys therefore partition the list: a posting belongs to the
block with the greatest key at or before it (the first block when it comes before every key;
that block's key then moves to it). A block grows to :data:`MOST` postings and is then split into
blocks of :data:`SIZE`; a block left empty is deleted. A prefix of the list is a few rows read in
key order, decoded together into numpy arrays by the search
(:func:`store.memory._rank_sums.block_arrays`) and unpacked by :func:`unpack` for a write, where
one row a posting cost ~0.55 us a posting in Python.

:func:`apply` changes one term's list in the caller's write transaction (writers of a project run
one at a time on both backends, so a block's read-modify-write sees every earlier commit).
:func:`convert` packs the postings of ``memory_rank_postings`` (the lists before 0014) at open.
"""

from __future__ import annotations

import itertools
import sys
from array import array
from collections.abc import Iterable, Iterator
from typing import Any

__all__ = ["MOST", "SIZE", "apply", "bound_after", "convert", "cut", "pack", "read_blocks", "unpack"]

SIZE = 120
"""Postings of a block made by a split or by :func:`convert`."""

MOST = 240
"""A block holding more postings than this is split: at most 3,840 bytes, so that SQLite keeps a
block in its table page (a larger one spills to overflow pages, and each write costs more pages)."""

_SWAP = sys.byteorder != "little"

_PAGE = SIZE * 1_000
"""Postings of ``memory_rank_postings`` packed at a time (a multiple of :data:`SIZE`)."""


def pack(impacts: array[float], docs: array[int]) -> bytes:
    """A block's ``data``: its impacts, then its entry numbers, little-endian."""
    if _SWAP:  # pragma: no cover - big-endian machines
        impacts, docs = array("d", impacts), array("q", docs)
        impacts.byteswap()
        docs.byteswap()
    return impacts.tobytes() + docs.tobytes()


def cut(term: str, impacts: array[float], docs: array[int]) -> Iterator[tuple[str, float, int, bytes]]:
    """Consecutive postings of ``term``'s list, in the list's order, cut into blocks of
    :data:`SIZE`: ``(term, impact, doc, data)`` rows, each keyed by its first posting."""
    for at in range(0, len(docs), SIZE):
        yield term, impacts[at], docs[at], pack(impacts[at : at + SIZE], docs[at : at + SIZE])


def unpack(data: bytes) -> tuple[array[float], array[int]]:
    """A block's impacts and entry numbers, from its ``data``."""
    half = len(data) // 2
    impacts, docs = array("d"), array("q")
    impacts.frombytes(data[:half])
    docs.frombytes(data[half:])
    if _SWAP:  # pragma: no cover - big-endian machines
        impacts.byteswap()
        docs.byteswap()
    return impacts, docs


_READ = "SELECT data FROM memory_rank_blocks WHERE term = ? ORDER BY impact DESC, doc LIMIT ? OFFSET ?"


def read_blocks(conn: Any, term: str, count: int, offset: int) -> list[bytes]:
    """The ``data`` of ``count`` blocks of ``term``'s list from block ``offset`` on, in order."""
    return [bytes(row[0]) for row in conn.execute(_READ, (term, count, offset)).fetchall()]


_KEY = "SELECT impact FROM memory_rank_blocks WHERE term = ? ORDER BY impact DESC, doc LIMIT 1 OFFSET ?"


def bound_after(conn: Any, term: str, blocks: int) -> float | None:
    """The greatest impact ``term``'s list holds past its first ``blocks`` blocks, or a bound above
    it: the key of the next block (at or before its first posting, after every posting before it);
    ``None`` when the list has no more blocks. The keys are the covering index's (``(term, impact,
    doc)``), so no block is read."""
    row = conn.execute(_KEY, (term, blocks)).fetchone()
    return None if row is None else float(row[0])


_AT = (
    "SELECT impact, doc, data FROM memory_rank_blocks WHERE term = ? AND impact >= ? AND (impact > ? OR"
    " doc <= ?) ORDER BY impact, doc DESC LIMIT 1"
)
"""The block with the greatest key at or before a posting: the index read backwards from the
posting's impact (a range both planners seek to, where an ``OR`` alone made them scan the list)."""
_FIRST = "SELECT impact, doc, data FROM memory_rank_blocks WHERE term = ? ORDER BY impact DESC, doc LIMIT 1"
_NEXT = (
    "SELECT impact, doc FROM memory_rank_blocks WHERE term = ? AND impact <= ? AND (impact < ? OR"
    " doc > ?) ORDER BY impact DESC, doc LIMIT 1"
)
_INSERT = "INSERT INTO memory_rank_blocks (term, impact, doc, data) VALUES (?, ?, ?, ?)"
_DELETE = "DELETE FROM memory_rank_blocks WHERE term = ? AND impact = ? AND doc = ?"
_UPDATE = (
    "UPDATE memory_rank_blocks SET impact = ?, doc = ?, data = ? WHERE term = ? AND impact = ? AND doc = ?"
)


def _before(first: tuple[float, int], second: tuple[float, int]) -> bool:
    """Whether posting ``first`` comes before ``second`` in a list (best impact first, then doc)."""
    return first[0] > second[0] or (first[0] == second[0] and first[1] < second[1])


def _position(impacts: array[float], docs: array[int], value: float, doc: int) -> int:
    """Where posting ``(value, doc)`` is, or would go, in a block's arrays."""
    low, high = 0, len(docs)
    while low < high:
        middle = (low + high) // 2
        if _before((impacts[middle], docs[middle]), (value, doc)):
            low = middle + 1
        else:
            high = middle
    return low


def apply(conn: Any, term: str, changes: Iterable[tuple[float, int, bool]]) -> None:
    """Add (``True``) or remove (``False``) the postings ``(impact, doc)`` of ``term``'s list.

    Each block touched is read once and written once, however many of the changes fall in it."""
    pending = sorted(changes, key=lambda change: (-change[0], change[1]))
    start = 0
    while start < len(pending):
        value, doc, _ = pending[start]
        row = conn.execute(_AT, (term, value, value, doc)).fetchone()
        row = row if row is not None else conn.execute(_FIRST, (term,)).fetchone()
        if row is None:  # an empty list: a block of its first postings
            key, impacts, docs, end = None, array("d"), array("q"), None
        else:
            key = (float(row[0]), int(row[1]))
            impacts, docs = unpack(bytes(row[2]))
            end = None
            if start + 1 < len(pending):  # more changes: which of them fall in this block
                found = conn.execute(_NEXT, (term, key[0], key[0], key[1])).fetchone()
                end = None if found is None else (float(found[0]), int(found[1]))
        stop = start
        while stop < len(pending) and (end is None or _before(pending[stop][:2], end)):
            value, doc, add = pending[stop]
            at = _position(impacts, docs, value, doc)
            present = at < len(docs) and docs[at] == doc and impacts[at] == value
            if add and not present:
                impacts.insert(at, value)
                docs.insert(at, doc)
            elif not add and present:
                del impacts[at], docs[at]
            stop += 1
        start = stop
        _write(conn, term, key, impacts, docs)


def _write(
    conn: Any, term: str, key: tuple[float, int] | None, impacts: array[float], docs: array[int]
) -> None:
    """Store a changed block (split when past :data:`MOST`, deleted when empty)."""
    if not docs:
        if key is not None:
            conn.execute(_DELETE, (term, *key))
        return
    first = (impacts[0], docs[0])
    new_key = first if key is None or _before(first, key) else key  # a key never passes its first
    pieces = [(new_key, 0, len(docs))]
    if len(docs) > MOST:
        pieces = [
            ((impacts[at], docs[at]) if at else new_key, at, min(at + SIZE, len(docs)))
            for at in range(0, len(docs), SIZE)
        ]
    (head, low, high), *rest = pieces
    data = pack(impacts[low:high], docs[low:high])
    if key is None:
        conn.execute(_INSERT, (term, *head, data))
    else:
        conn.execute(_UPDATE, (*head, data, term, *key))
    for piece_key, low, high in rest:
        conn.execute(_INSERT, (term, *piece_key, pack(impacts[low:high], docs[low:high])))


_POSTINGS = (
    "SELECT impact, doc FROM memory_rank_postings WHERE term = ? ORDER BY impact DESC, doc LIMIT ? OFFSET ?"
)


def convert(conn: Any, batch: int = 200) -> int:
    """Pack the postings of up to ``batch`` terms of ``memory_rank_convert`` into blocks (their
    rows of ``memory_rank_postings`` are deleted); how many it packed (0: none was left)."""
    terms = [
        row[0] for row in conn.execute("SELECT term FROM memory_rank_convert ORDER BY term LIMIT ?", (batch,))
    ]
    for term in terms:
        conn.execute("DELETE FROM memory_rank_blocks WHERE term = ?", (term,))
        for offset in itertools.count(0, _PAGE):  # a page at a time: 'the' holds nearly every entry
            rows = conn.execute(_POSTINGS, (term, _PAGE, offset)).fetchall()
            impacts = array("d", [float(row[0]) for row in rows])
            docs = array("q", [int(row[1]) for row in rows])
            if not rows:
                break
            conn.executemany(_INSERT, cut(term, impacts, docs))
            if len(rows) < _PAGE:
                break
        conn.execute("DELETE FROM memory_rank_postings WHERE term = ?", (term,))
        conn.execute("DELETE FROM memory_rank_convert WHERE term = ?", (term,))
    return len(terms)
