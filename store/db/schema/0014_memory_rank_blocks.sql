-- The ranked search's lists in blocks (store/memory/_rank_blocks.py): a term's list, best impact
-- first, as rows of up to 240 postings each, packed (little-endian float64 impacts, then int64
-- entry numbers) in the list's order, keyed by a posting at or before the block's first. A
-- prefix of 2,048 postings is then a few rows read and unpacked in C, where one row a posting
-- (memory_rank_postings) cost ~0.55 us a posting in Python, most of a ranked query.
-- A rowid table with its key in an index, not WITHOUT ROWID: a block of up to 3,840 bytes then sits
-- in its table page, where an index b-tree keeps only ~1,000 bytes of a row in the page and the rest
-- in overflow pages, which made every block written cost several pages.
CREATE TABLE memory_rank_blocks (
    term    TEXT NOT NULL,
    impact  REAL NOT NULL,
    doc     INTEGER NOT NULL,
    data    BLOB NOT NULL
);
CREATE UNIQUE INDEX memory_rank_blocks_order ON memory_rank_blocks (term, impact DESC, doc);

-- The terms whose postings still wait in memory_rank_postings: the store packs them into blocks
-- when it opens the project (a term at a time, in batches; ranked queries read the entries' text
-- directly until then), and memory_rank_postings is left empty.
CREATE TABLE memory_rank_convert (term TEXT PRIMARY KEY);
INSERT INTO memory_rank_convert (term) SELECT DISTINCT term FROM memory_rank_postings WHERE true
ON CONFLICT (term) DO NOTHING;
