"""The console's memory pages: memory search (the oracle's summaries folded away below the other
entries) and one memory entry (its body as Markdown) with the proposals citing it, its revisions,
diffs, aliases, provenance, checks and curation forms.
"""

from __future__ import annotations

from typing import Any

from capabilities.console._citing import citing_proposals_section, is_oracle_summary
from capabilities.console._html import Markup, attr_url, esc, html, join, when
from capabilities.console._markdown import render_markdown
from capabilities.console._widgets import (
    badge,
    diff_block,
    memory_link,
    next_page,
    table,
)
from store import Store
from store.errors import RoundtableError

__all__ = ["memory_page", "memory_search_page"]


# -- search ----------------------------------------------------------------------------------------


def _entry_rows(items: list[dict[str, Any]]) -> list[Markup]:
    return [
        html(
            '<tr><td>$link</td><td><span class="token mono">$scope</span></td><td>$kind</td><td>$status</td>'
            "<td>$rev</td><td>$at</td></tr>",
            link=memory_link(m["id"], m["title"]),
            scope=m["scope"],
            kind=m["kind"],
            status=badge(m["status"]),
            rev=m["revision"],
            at=when(m["updated_at"]),
        )
        for m in items
    ]


def _folded_summaries(summaries: list[dict[str, Any]]) -> Markup:
    """The oracle's summaries of this page, in a closed ``<details>`` under the other entries."""
    if not summaries:
        return Markup("")
    rows = [
        html(
            '<tr><td>$link</td><td><a href="$href" class="id">$proposal</a></td><td>$status</td>'
            "<td>$at</td></tr>",
            link=memory_link(m["id"], m["title"]),
            href=f"/proposals/{m['source_proposal_id']}",
            proposal=m["source_proposal_id"],
            status=badge(m["status"]),
            at=when(m["updated_at"]),
        )
        for m in summaries
    ]
    count = f"{len(summaries)} oracle summar{'ies' if len(summaries) != 1 else 'y'}"
    return html(
        '<details class="oracle-summaries"><summary>$count on this page, folded away</summary>'
        '<p class="note">Notes the MemoryOracle wrote for one review each. '
        '<a href="$all">List only summaries</a>.</p>$table</details>',
        count=count,
        all=attr_url("/memories", kind="summary"),
        table=table("Oracle summaries", ["Entry", "For proposal", "Status", "Updated (UTC)"], rows, empty=""),
    )


def memory_search_page(
    store: Store,
    *,
    q: str | None,
    scope: str | None,
    kind: str | None,
    status: str | None,
    cursor: str | None,
) -> tuple[str, Markup]:
    """Memory search: the list endpoint's filters as a form, and the results. Unless a kind is
    asked for, the oracle's summaries are folded away under the other entries."""
    answer = store.memory_admin.list(q=q, scope=scope, kind=kind, status=status, limit=50, cursor=cursor)
    items = sorted(answer["items"], key=lambda m: m["kind"].lower() == "summary")  # after their decisions
    folded = [] if kind else [m for m in items if is_oracle_summary(m)]
    rows = _entry_rows([m for m in items if m not in folded])
    after = answer["next_cursor"]
    more = next_page(
        attr_url("/memories", q=q, scope=scope, kind=kind, status=status, cursor=after) if after else None
    )
    form = html(
        '<form class="search" method="get" action="/memories" role="search" aria-label="Memory search">'
        '<label for="q">Text</label><input id="q" name="q" type="search" value="$q">'
        '<label for="scope">Scope</label><input id="scope" name="scope" value="$scope">'
        '<label for="kind">Kind</label><input id="kind" name="kind" value="$kind">'
        '<label for="status">Status</label><input id="status" name="status" value="$status"'
        ' placeholder="any but archived">'
        '<button type="submit">Search</button></form>',
        q=q or "",
        scope=scope or "",
        kind=kind or "",
        status=status or "",
    )
    body = html(
        "<h1>Memory</h1>$form$table$summaries$more",
        form=form,
        table=table(
            "Memory entries, oldest first",
            ["Entry", "Scope", "Kind", "Status", "Revision", "Updated (UTC)"],
            rows,
            empty="No other entries match." if folded else "No entries match.",
        ),
        summaries=_folded_summaries(folded),
        more=more,
    )
    return "Memory", body


def _revision_options(revisions: list[dict[str, Any]], chosen: int) -> Markup:
    return join(
        html(
            '<option value="$n"$sel>r$n · $title</option>',
            n=r["revision"],
            sel=Markup(" selected") if r["revision"] == chosen else Markup(""),
            title=r["title"][:60],
        )
        for r in revisions
    )


def _diff_section(
    store: Store, memory_id: str, revisions: list[dict[str, Any]], a: str | None, b: str | None
) -> Markup:
    if len(revisions) < 2:
        return html('<p class="empty">Only one revision so far.</p>')
    latest = revisions[-1]["revision"]
    try:
        diff = store.memory_admin.diff(memory_id, a or str(revisions[-2]["revision"]), b or "latest")
        rendered = diff_block(
            diff["diff"], label=f"Changes from revision {diff['from']} to revision {diff['to']}"
        )
        start, end = diff["from"], diff["to"]
    except RoundtableError as exc:
        rendered = html('<p class="error" role="alert">$msg</p>', msg=exc.message)
        start, end = revisions[-2]["revision"], latest
    return html(
        '<form class="diff-picker" method="get" action="$action">'
        '<label for="from">From</label><select id="from" name="from">$from_opts</select>'
        '<label for="to">To</label><select id="to" name="to">$to_opts</select>'
        '<button type="submit">Compare</button></form>'
        '<h3 id="diff-h">Revision $start → revision $end</h3>$diff',
        action=f"/memories/{memory_id}",
        from_opts=_revision_options(revisions, start),
        to_opts=_revision_options(revisions, end),
        start=start,
        end=end,
        diff=rendered,
    )


def _sources(items: list[dict[str, Any]]) -> Markup:
    entries = []
    for edge in items:
        label = (
            memory_link(str(edge["source_id"]), (edge.get("source") or {}).get("title"))
            if edge["source_type"] == "memory" and edge.get("exists")
            else html('<span class="id">$id</span>', id=edge["source_id"])
        )
        flags = badge("missing", tone="bad") if edge.get("missing") else Markup("")
        if edge.get("cycle"):
            flags = html("$f $c", f=flags, c=badge("cycle", tone="warn"))
        nested = (
            html("<ul>$inner</ul>", inner=_sources(edge["sources"])) if edge.get("sources") else Markup("")
        )
        entries.append(
            html(
                "<li>$type $label <em>($relation)</em> $flags$nested</li>",
                type=edge["source_type"],
                label=label,
                relation=edge["relation"],
                flags=flags,
                nested=nested,
            )
        )
    return join(entries)


def _actions(memory: dict[str, Any], csrf: str) -> Markup:
    status, pinned = memory["status"], memory["pinned"]
    live = status not in ("archived", "merged")
    offered = [
        ("pin", "Pin", live and not pinned),
        ("unpin", "Unpin", pinned),
        ("archive", "Archive", live),
        ("restore", "Restore", status == "archived"),
        ("resynthesize", "Resynthesize", live and memory["resynthesis_status"] != "requested"),
    ]
    buttons = join(
        html(
            '<button type="submit" name="action" value="$action">$label</button>', action=action, label=label
        )
        for action, label, allowed in offered
        if allowed
    )
    if not buttons:
        return Markup("")
    return html(
        '<form class="actions" method="post" action="$action" aria-label="Memory actions">'
        '<input type="hidden" name="csrf_token" value="$csrf">$buttons</form>',
        action=f"/memories/{memory['id']}/action",
        csrf=csrf,
        buttons=buttons,
    )


def _checks_section(checks: list[dict[str, Any]]) -> Markup:
    items = join(
        html('<li class="check"><span class="badge">$kind</span> <code class="pattern">$pattern</code>'
             ' in <span class="paths">$paths</span> <em>$message</em></li>', kind=c["kind"],
             pattern=c["pattern"], paths=", ".join(c.get("paths") or []) or "every file",
             message=c.get("message") or "") for c in checks)  # fmt: skip
    return html('<section aria-labelledby="chk-h"><h2 id="chk-h">Checks ($n)</h2><p class="note">Evaluated'
                ' exactly on each patch; a failure is certain.</p><ul class="checks">$items</ul></section>',
                n=len(checks), items=items) if checks else Markup("")  # fmt: skip


def memory_page(
    store: Store, memory_id: str, *, a: str | None, b: str | None, csrf: str
) -> tuple[str, Markup]:
    """One entry: body, metadata, actions, revisions, a diff between two of them, aliases, provenance."""
    memory = store.memory_admin.get(memory_id)["memory"]
    revisions = store.memory_admin.revisions(memory_id)["items"]
    graph = store.memory_admin.graph(memory_id)
    chain = store.memory_admin.source_chain(memory_id, depth=3)["items"]
    facts = [
        ("ID", html('<span class="id">$v</span>', v=memory["id"])),
        ("Status", badge(memory["status"])),
        ("Scope", html('<span class="token">$v</span>', v=memory["scope"])),
        ("Kind", esc(memory["kind"])),
        ("Revision", esc(memory["revision"])),
        ("Pinned", esc("yes" if memory["pinned"] else "no")),
        ("Importance", esc(memory["importance"])),
        ("Confidence", esc("unknown" if memory["confidence"] is None else memory["confidence"])),
        ("Reliability", esc("unknown" if memory["reliability"] is None else memory["reliability"])),
        ("Tags", esc(", ".join(memory["tags"]) or "none")),
        ("Resynthesis", badge(memory["resynthesis_status"]) if memory["resynthesis_status"] else esc("none")),
        ("Updated (UTC)", when(memory["updated_at"])),
    ]
    revision_rows = [
        html(
            "<tr><td>r$n</td><td>$title</td><td>$reason</td><td>$actor</td><td>$at</td></tr>",
            n=r["revision"],
            title=r["title"],
            reason=r["reason"] or "",
            actor=r["actor"],
            at=when(r["created_at"]),
        )
        for r in revisions
    ]
    aliases = join(
        html("<li>$alias → $canonical <em>$reason</em></li>", alias=memory_link(row["alias_id"]),
             canonical=memory_link(row["canonical_id"]), reason=row["reason"] or "")
        for row in graph["items"]
    )  # fmt: skip
    chain_text = (
        html("$chain $badge", chain=" → ".join(graph["canonical_chain"]), badge=badge("cycle", tone="bad"))
        if graph["cycle"]
        else join((memory_link(i) for i in graph["canonical_chain"]), " → ")
    )
    revise_form = html(
        '<form class="revise" method="post" action="$action">'
        '<input type="hidden" name="csrf_token" value="$csrf">'
        '<input type="hidden" name="expected_revision" value="$rev">'
        '<label for="rev-title">Title</label><input id="rev-title" name="title" value="$title">'
        '<label for="rev-body">Body</label><textarea id="rev-body" name="body_md" rows="8">$body</textarea>'
        '<label for="rev-reason">Reason for the change</label><input id="rev-reason" name="reason" required>'
        '<button type="submit">Save revision</button></form>',
        action=f"/memories/{memory_id}/revise",
        csrf=csrf,
        rev=memory["revision"],
        title=memory["title"],
        body=memory["body_md"],
    )
    body = html(
        '<h1>$title</h1><div class="memory-body md" tabindex="0" aria-label="Body">$body</div>'
        '<dl class="facts">$facts</dl>$actions$checks$citing'
        '<section aria-labelledby="rev-h"><h2 id="rev-h">Revisions</h2>$revisions</section>'
        '<section aria-labelledby="diff-sec-h"><h2 id="diff-sec-h">Compare revisions</h2>$diff</section>'
        '<section aria-labelledby="alias-h"><h2 id="alias-h">Aliases</h2><p>Canonical chain: $chain</p>'
        "<ul>$aliases</ul></section>"
        '<section aria-labelledby="prov-h"><h2 id="prov-h">Provenance</h2>'
        '<ul class="sources">$sources</ul></section>'
        '<section aria-labelledby="edit-h"><details><summary><h2 id="edit-h">Revise</h2></summary>'
        "$revise</details></section>",
        title=memory["title"],
        body=render_markdown(memory["body_md"], heading=3),
        facts=join(html("<div><dt>$k</dt><dd>$v</dd></div>", k=k, v=v) for k, v in facts),
        actions=_actions(memory, csrf),
        checks=_checks_section(memory["checks"]),
        citing=citing_proposals_section(
            store, memory_id, [row["alias_id"] for row in graph["items"] if row["canonical_id"] == memory_id]
        ),
        revisions=table(
            "Revision history",
            ["Revision", "Title", "Reason", "By", "At (UTC)"],
            revision_rows,
            empty="None.",
        ),
        diff=_diff_section(store, memory_id, revisions, a, b),
        chain=chain_text,
        aliases=aliases or html('<li class="empty">No aliases.</li>'),
        sources=_sources(chain) or html('<li class="empty">No recorded sources.</li>'),
        revise=revise_form,
    )
    return memory["title"], body
