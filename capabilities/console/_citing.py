"""Who cites a memory entry, and which entries are the oracle's own notes.

- :func:`citing_proposals_section`: on an entry's page, the proposals whose oracle warnings cite it
  (or one of its aliases), each with how many of its warnings do and how many of those were made
  on its current patch version. The warnings are read through the event log's type index, oldest
  first, at most :data:`SCAN_LIMIT` of them; past that the section says the list may be partial.
- :func:`is_oracle_summary`: an entry of kind ``summary`` recorded through a launched role's
  capability (so it carries the proposal it was written for), as the MemoryOracle writes one per
  review; the memory list folds these away.
"""

from __future__ import annotations

from typing import Any

from capabilities.console._html import Markup, html, when
from capabilities.console._widgets import badge, table
from store import Store
from store.errors import NotFound

__all__ = ["SCAN_LIMIT", "citing_proposals_section", "is_oracle_summary"]

SCAN_LIMIT = 20_000
"""The most oracle warnings one entry page reads to find the proposals citing the entry."""
_PAGE = 500  # the event feed's largest page
_SHOWN = 50  # the most citing proposals listed, most recently citing first
_WARNING = "memory.oracle_warning"


def is_oracle_summary(entry: dict[str, Any]) -> bool:
    """Whether ``entry`` is a summary a launched role (the MemoryOracle) recorded for a proposal."""
    return str(entry.get("kind", "")).lower() == "summary" and bool(entry.get("source_proposal_id"))


def _citing_warnings(store: Store, ids: set[str]) -> tuple[dict[str, list[dict[str, Any]]], bool]:
    """Warnings citing any of ``ids``, by proposal; and whether the scan stopped at its limit."""
    by_proposal: dict[str, list[dict[str, Any]]] = {}
    after, read = 0, 0
    while read < SCAN_LIMIT:
        page = store.event_feed.after(after, limit=_PAGE, types=(_WARNING,))
        read += len(page)
        for event in page:
            cited = event.payload.get("cited_memory_ids")
            if event.proposal_id and isinstance(cited, list) and ids.intersection(map(str, cited)):
                by_proposal.setdefault(event.proposal_id, []).append(event.to_dict())
        if len(page) < _PAGE:
            return by_proposal, False
        after = page[-1].id
    return by_proposal, True


def _row(store: Store, proposal_id: str, warnings: list[dict[str, Any]]) -> Markup:
    try:
        proposal: dict[str, Any] | None = store.proposals.get(proposal_id)
    except NotFound:
        proposal = None
    current = None if proposal is None else proposal.get("current_version")
    on_current = sum(1 for w in warnings if (w.get("payload") or {}).get("patch_version") == current)
    last = warnings[-1].get("created_at", "")
    return html(
        '<tr><td>$link<div class="id">$id</div></td><td>$status</td><td>$count$current</td><td>$at</td></tr>',
        link=html('<a href="$href">$title</a>', href=f"/proposals/{proposal_id}", title=proposal["title"])
        if proposal
        else badge("missing", tone="bad"),
        id=proposal_id,
        status=badge(proposal["status"]) if proposal else "",
        count=f"{len(warnings)} warning{'s' if len(warnings) != 1 else ''}",
        current=html(" · $n on the current patch (v$v)", n=on_current, v=current)
        if current is not None
        else "",
        at=when(last),
    )


def citing_proposals_section(store: Store, memory_id: str, aliases: list[str]) -> Markup:
    """The proposals whose oracle warnings cite ``memory_id`` or one of its ``aliases``."""
    by_proposal, partial = _citing_warnings(store, {memory_id, *aliases})
    newest = sorted(by_proposal.items(), key=lambda item: -int(item[1][-1]["id"]))
    rows = [_row(store, proposal_id, warnings) for proposal_id, warnings in newest[:_SHOWN]]
    notes = []
    if len(newest) > _SHOWN:
        notes.append(f"Showing the {_SHOWN} that cited it most recently of {len(newest)}.")
    if partial:
        notes.append(f"Only the first {SCAN_LIMIT} oracle warnings were read; there may be more.")
    return html(
        '<section aria-labelledby="cited-h"><h2 id="cited-h">Cited by proposals ($n)</h2>'
        '<p class="note">Proposals whose oracle warnings cite this entry$aliases, most recent first.'
        " $notes</p>$table</section>",
        n=len(newest),
        aliases=" or one of its aliases" if aliases else "",
        notes=" ".join(notes),
        table=table(
            "Proposals citing this entry",
            ["Proposal", "Status", "Warnings citing it", "Last cited (UTC)"],
            rows,
            empty="No oracle warning cites this entry.",
        ),
    )
