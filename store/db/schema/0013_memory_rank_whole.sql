-- The ranked search's lists hold every posting (store/memory/_rank_index.py no longer cuts them):
-- a list cut to its best 1,024 postings could not settle a query whose filters pass few of them
-- (scope=project, a grant's scopes) or whose terms tie at the cut (a common identifier at 1,000,000
-- entries), and the search then scored every match from its stored terms (seconds). The search now
-- reads each list's prefix and reads further when it cannot stop (store/memory/_ranked.py), so a
-- list's bound is where its read stopped, and the stored bound and postings count go.
-- The lists kept so far are incomplete, so the index is rebuilt: every entry goes back to the
-- backlog, which the store drains when it opens the project (ranked queries read the entries'
-- text directly until then, as after 0012).
DELETE FROM memory_rank_postings;
DELETE FROM memory_rank_terms;
DELETE FROM memory_rank_docs;
ALTER TABLE memory_rank_terms DROP COLUMN bound;
ALTER TABLE memory_rank_terms DROP COLUMN postings;
INSERT INTO memory_rank_backlog (id) SELECT id FROM memory_entries WHERE true
ON CONFLICT (id) DO NOTHING;
