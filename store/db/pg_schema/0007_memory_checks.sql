-- PostgreSQL twin of schema/0007_memory_checks.sql.
ALTER TABLE memory_entries ADD COLUMN checks TEXT COLLATE "C";
