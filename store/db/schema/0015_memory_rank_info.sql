-- What the ranked search reads of an entry to place it, by its entry number (store/memory/_ranked.py):
-- whether it is a summary, its importance and ID (the contract's order) and the columns the filters
-- test. The search read them through memory_rank_docs and memory_entries' ID index into the entries'
-- wide rows, three B-tree descents an entry; this narrow table is one, ~60 bytes a row, so a query's
-- entries share pages (x2.2 less time for the filters of a query's candidates, measured after a scan).
-- The triggers keep it equal to that join: a row for each row of memory_rank_docs, updated with the
-- entry's columns by every write, whatever the code path (tests/store/memory/test_memory_rank_info.py).
CREATE TABLE memory_rank_info (
    doc         INTEGER PRIMARY KEY,
    id          TEXT NOT NULL,
    scope       TEXT NOT NULL,
    kind        TEXT NOT NULL,
    status      TEXT NOT NULL,
    importance  INTEGER NOT NULL,
    summary     INTEGER NOT NULL
);
INSERT INTO memory_rank_info (doc, id, scope, kind, status, importance, summary)
SELECT d.doc, m.id, m.scope, m.kind, m.status, m.importance, m.lc_kind = 'summary'
FROM memory_rank_docs AS d JOIN memory_entries AS m ON m.id = d.id ORDER BY d.doc;

CREATE TRIGGER memory_rank_info_insert AFTER INSERT ON memory_rank_docs
BEGIN
    INSERT INTO memory_rank_info (doc, id, scope, kind, status, importance, summary)
    SELECT new.doc, m.id, m.scope, m.kind, m.status, m.importance, m.lc_kind = 'summary'
    FROM memory_entries AS m WHERE m.id = new.id;
END;
CREATE TRIGGER memory_rank_info_delete AFTER DELETE ON memory_rank_docs
BEGIN
    DELETE FROM memory_rank_info WHERE doc = old.doc;
END;
-- A replacement rewrites every core column, usually to the same values: only a change writes.
CREATE TRIGGER memory_rank_info_update AFTER UPDATE OF scope, kind, status, importance, lc_kind ON memory_entries
WHEN old.scope IS NOT new.scope OR old.kind IS NOT new.kind OR old.status IS NOT new.status
    OR old.importance IS NOT new.importance OR old.lc_kind IS NOT new.lc_kind
BEGIN
    UPDATE memory_rank_info SET scope = new.scope, kind = new.kind, status = new.status,
        importance = new.importance, summary = new.lc_kind = 'summary'
    WHERE doc = (SELECT doc FROM memory_rank_docs WHERE id = new.id);
END;
-- The store deletes no entry; should one go, it places nowhere (as the join found no row).
CREATE TRIGGER memory_rank_info_entry_delete AFTER DELETE ON memory_entries
BEGIN
    DELETE FROM memory_rank_info WHERE doc = (SELECT doc FROM memory_rank_docs WHERE id = old.id);
END;
