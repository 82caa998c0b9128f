"""Ranked answers scored from the entries' stored terms rather than walked from the lists.

The walk (:mod:`store.memory._ranked`) settles an entry from its stored terms when its lists'
prefixes cannot (a **probe**); a scope filter that reaches few entries is answered by scoring
those entries so (:func:`evaluate`); and while entries written before the index wait in its
backlog, the function is evaluated over the entries' text (:func:`reference`). All of them use
:mod:`store.memory._rank`'s function, so they give the same numbers to the bit, and
:func:`ordered` puts any of them in the contract's order.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from store.memory._rank import impact, reference_ranking, score
from store.memory._search import MemoryFilter

__all__ = ["evaluate", "ordered", "reference", "stored_count", "term_keys"]

Key = tuple[bool, float, int, str]  # is a summary, -score, -importance, id: the contract's order


def stored_count(stored: str, key: str) -> int | None:
    """The count of the term whose JSON key (with its colon) is ``key`` in an entry's stored
    terms (a JSON object of term counts, whose keys hold no quote), or ``None``."""
    at = stored.find(key)
    if at < 0:
        return None
    start = at + len(key)
    end = stored.find(",", start)  # the count ends at the next comma, or at the object's end
    return int(stored[start : end if end >= 0 else len(stored) - 1])


def ordered(found: list[tuple[float, tuple[bool, int, str]]]) -> list[tuple[str, float]]:
    """``(id, score)`` of ``(score, (is a summary, importance, id))`` entries, in the contract's order."""
    keys: list[Key] = sorted((info[0], -value, -info[1], info[2]) for value, info in found)
    return [(entry_id, -negated) for _, negated, _, entry_id in keys]


def _impacts(keys: Sequence[str], length: int, stored: str) -> list[float | None]:
    """The impacts of the terms whose JSON keys are ``keys`` in an entry's stored terms."""
    return [None if tf is None else impact(tf, length) for tf in (stored_count(stored, key) for key in keys)]


def term_keys(terms: Sequence[str]) -> list[str]:
    """The terms as the keys (with their colon) of an entry's stored terms."""
    return [json.dumps(term, ensure_ascii=False) + ":" for term in terms]


def evaluate(
    conn: Any, terms: list[str], weights: list[float], filters: MemoryFilter
) -> list[tuple[str, float]]:
    """Every match of ``terms`` that passes ``filters``, scored from the stored terms, in order."""
    where, params = _where(filters)
    keys = term_keys(terms)
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
    answer = ordered(found)
    return answer[: filters.limit] if filters.limit > 0 else answer


def reference(conn: Any, text: str, filters: MemoryFilter) -> list[tuple[str, float]]:
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
