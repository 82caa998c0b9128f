-- PostgreSQL twin of schema/0013_memory_rank_whole.sql: the ranked lists hold every posting, so
-- the index is rebuilt from the backlog, and the stored bound and postings count go.
DELETE FROM memory_rank_postings;
DELETE FROM memory_rank_terms;
DELETE FROM memory_rank_docs;
ALTER TABLE memory_rank_terms DROP COLUMN bound;
ALTER TABLE memory_rank_terms DROP COLUMN postings;
INSERT INTO memory_rank_backlog (id) SELECT id FROM memory_entries ON CONFLICT (id) DO NOTHING;
