-- The ranked search's own index (store/memory/_rank_index.py writes it, _ranked.py reads it), in
-- place of the FTS5 table memory_fts: BM25 there is computed for every matching entry before the
-- best is known, and FTS5 cannot prune. Here each term's postings are ordered by their impact
-- (BM25's saturated term frequency, fixed per entry: store/memory/_rank.py), so a top-k search
-- reads a prefix of each list. Written by the store in the transaction of every write of an
-- entry's text, never by triggers: the terms are Python's (str.lower(), [^\W_]+ runs).
DROP TRIGGER memory_fts_insert;
DROP TRIGGER memory_fts_delete;
DROP TRIGGER memory_fts_update;
DROP TABLE memory_fts;

-- One row per entry: its length in terms and its terms' frequencies (a JSON object), read to
-- settle the score of an entry a list did not yet show, and to take an entry out of the lists.
CREATE TABLE memory_rank_docs (
    doc     INTEGER PRIMARY KEY,
    id      TEXT NOT NULL UNIQUE,
    length  INTEGER NOT NULL,
    terms   TEXT NOT NULL
);

-- Per term: how many entries hold it (df; the row of the empty term counts the entries), how
-- many postings its list keeps, and `bound`: no entry left out of its list has a higher impact.
CREATE TABLE memory_rank_terms (
    term      TEXT PRIMARY KEY,
    df        INTEGER NOT NULL,
    postings  INTEGER NOT NULL DEFAULT 0,
    bound     REAL NOT NULL DEFAULT 0
);

-- The lists, best impact first. A list holds every entry of its term until it passes twice
-- store.memory._rank_index.KEEP postings; then its lowest are dropped and `bound` raised.
CREATE TABLE memory_rank_postings (
    term    TEXT NOT NULL,
    impact  REAL NOT NULL,
    doc     INTEGER NOT NULL,
    PRIMARY KEY (term, impact DESC, doc)
) WITHOUT ROWID;

-- Entries not yet in the index (those written before this migration); the store indexes them
-- when it opens the project, and a ranked query evaluates them directly until then.
CREATE TABLE memory_rank_backlog (id TEXT PRIMARY KEY);
INSERT INTO memory_rank_backlog (id) SELECT id FROM memory_entries;
