-- PostgreSQL twin of schema/0010_patch_blobs.sql (a no-op on SQLite): the bytes of every patch
-- version, so that every host sharing the project's schema reads them, and nothing is written under
-- .roundtable/patches (store/patches/_db_artifacts.py). A blob is inserted in the same transaction
-- as its patch_versions row, and never changed or removed: no orphan can exist, and `roundtable gc`
-- has nothing to collect. Each read recomputes the content's SHA-256 and compares it with the
-- version's row; the CHECKs here only keep a faulty writer from storing a blob that disagrees with
-- itself (sha256() is PostgreSQL's own, 11 and later).
CREATE TABLE patch_blobs (
    proposal_id  TEXT COLLATE "C" NOT NULL,
    version      BIGINT NOT NULL,
    sha256       TEXT COLLATE "C" NOT NULL,
    size_bytes   BIGINT NOT NULL CHECK (size_bytes >= 0),
    content      BYTEA NOT NULL,
    PRIMARY KEY (proposal_id, version),
    FOREIGN KEY (proposal_id, version) REFERENCES patch_versions (proposal_id, version),
    CONSTRAINT patch_blobs_size_matches CHECK (octet_length(content) = size_bytes),
    CONSTRAINT patch_blobs_hash_matches CHECK (encode(sha256(content), 'hex') = sha256)
);
CREATE TRIGGER patch_blobs_no_update BEFORE UPDATE ON patch_blobs
    FOR EACH ROW EXECUTE FUNCTION refuse_change('patch versions are immutable');
CREATE TRIGGER patch_blobs_no_delete BEFORE DELETE ON patch_blobs
    FOR EACH ROW EXECUTE FUNCTION refuse_change('patch versions are immutable');
CREATE TRIGGER patch_blobs_no_truncate BEFORE TRUNCATE ON patch_blobs
    FOR EACH STATEMENT EXECUTE FUNCTION refuse_change('patch versions are immutable');
