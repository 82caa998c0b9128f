-- PostgreSQL twin of schema/0014_memory_rank_blocks.sql: the ranked lists in packed blocks.
CREATE TABLE memory_rank_blocks (
    term    TEXT COLLATE "C" NOT NULL,
    impact  DOUBLE PRECISION NOT NULL,
    doc     BIGINT NOT NULL,
    data    BYTEA NOT NULL
);
CREATE UNIQUE INDEX memory_rank_blocks_order ON memory_rank_blocks (term, impact DESC, doc);
-- Packed doubles and integers do not compress: no compression is tried on each write.
ALTER TABLE memory_rank_blocks ALTER COLUMN data SET STORAGE EXTERNAL;

CREATE TABLE memory_rank_convert (term TEXT COLLATE "C" PRIMARY KEY);
INSERT INTO memory_rank_convert (term) SELECT DISTINCT term FROM memory_rank_postings
ON CONFLICT (term) DO NOTHING;
