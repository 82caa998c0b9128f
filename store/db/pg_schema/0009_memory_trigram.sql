-- PostgreSQL twin of schema/0009_memory_trigram.sql: the substring search's candidate filter is a
-- pg_trgm GIN index over each lower-cased shadow column (SQLite: an FTS5 trigram table). pg_trgm's
-- LIKE/strpos support works on the stored text as it is (no folding of its own), so the shadow
-- columns' Python lower() stays the only case folding. Not yet read by store/memory (docs/scaling.md).
-- pg_trgm is a trusted extension: a database owner may create it. It lives in the public schema,
-- which every project's search_path ends with.
CREATE EXTENSION IF NOT EXISTS pg_trgm WITH SCHEMA public;
CREATE INDEX memory_trigram_title ON memory_entries USING gin (lc_title public.gin_trgm_ops);
CREATE INDEX memory_trigram_body ON memory_entries USING gin (lc_body public.gin_trgm_ops);
CREATE INDEX memory_trigram_scope ON memory_entries USING gin (lc_scope public.gin_trgm_ops);
CREATE INDEX memory_trigram_kind ON memory_entries USING gin (lc_kind public.gin_trgm_ops);
