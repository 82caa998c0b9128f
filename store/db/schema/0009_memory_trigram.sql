-- A trigram index over the lower-cased shadow columns: the candidate filter of memory.query's
-- substring search (store/memory/_query.py). A phrase of trigrams matches exactly the rows whose
-- lower-cased title, body, scope or kind contains the query; the exact score is then counted on
-- those rows alone, as before. The shadow columns already hold Python's lower(), and the index
-- must not fold them again its own way (FTS5 folds 'İ' or 'ß' unlike Python): case_sensitive 1.
-- detail is full (the default) because phrase queries need positions; nothing ranks by this index,
-- so it keeps no column sizes.
CREATE VIRTUAL TABLE memory_trigram USING fts5 (
    lc_title, lc_body, lc_scope, lc_kind,
    content = 'memory_entries', content_rowid = 'rowid',
    tokenize = 'trigram case_sensitive 1', columnsize = 0
);

-- Entries written before this migration.
INSERT INTO memory_trigram (memory_trigram) VALUES ('rebuild');

-- Kept in sync like memory_fts (0001): every write of the shadow columns goes through these.
CREATE TRIGGER memory_trigram_insert AFTER INSERT ON memory_entries
BEGIN
    INSERT INTO memory_trigram (rowid, lc_title, lc_body, lc_scope, lc_kind)
    VALUES (new.rowid, new.lc_title, new.lc_body, new.lc_scope, new.lc_kind);
END;
CREATE TRIGGER memory_trigram_delete AFTER DELETE ON memory_entries
BEGIN
    INSERT INTO memory_trigram (memory_trigram, rowid, lc_title, lc_body, lc_scope, lc_kind)
    VALUES ('delete', old.rowid, old.lc_title, old.lc_body, old.lc_scope, old.lc_kind);
END;
-- A replacement rewrites every core column, usually to the same text: only a change re-indexes.
CREATE TRIGGER memory_trigram_update AFTER UPDATE OF lc_title, lc_body, lc_scope, lc_kind ON memory_entries
WHEN old.lc_title IS NOT new.lc_title OR old.lc_body IS NOT new.lc_body
    OR old.lc_scope IS NOT new.lc_scope OR old.lc_kind IS NOT new.lc_kind
BEGIN
    INSERT INTO memory_trigram (memory_trigram, rowid, lc_title, lc_body, lc_scope, lc_kind)
    VALUES ('delete', old.rowid, old.lc_title, old.lc_body, old.lc_scope, old.lc_kind);
    INSERT INTO memory_trigram (rowid, lc_title, lc_body, lc_scope, lc_kind)
    VALUES (new.rowid, new.lc_title, new.lc_body, new.lc_scope, new.lc_kind);
END;
