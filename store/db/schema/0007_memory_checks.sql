-- Executable checks of a decision or constraint (docs/memory.md, "Checks"): a JSON list of
-- {kind, pattern, paths, message}, validated by store/memory/_checks.py when recorded; NULL for none.
ALTER TABLE memory_entries ADD COLUMN checks TEXT;
