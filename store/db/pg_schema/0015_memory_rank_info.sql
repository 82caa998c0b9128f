-- PostgreSQL twin of schema/0015_memory_rank_info.sql: what the ranked search reads of an entry to
-- place it, by its entry number, kept equal to memory_rank_docs joined to memory_entries by triggers.
CREATE TABLE memory_rank_info (
    doc         BIGINT PRIMARY KEY,
    id          TEXT COLLATE "C" NOT NULL,
    scope       TEXT COLLATE "C" NOT NULL,
    kind        TEXT COLLATE "C" NOT NULL,
    status      TEXT COLLATE "C" NOT NULL,
    importance  BIGINT NOT NULL,
    summary     BOOLEAN NOT NULL
);
INSERT INTO memory_rank_info (doc, id, scope, kind, status, importance, summary)
SELECT d.doc, m.id, m.scope, m.kind, m.status, m.importance, m.lc_kind = 'summary'
FROM memory_rank_docs AS d JOIN memory_entries AS m ON m.id = d.id;

CREATE FUNCTION memory_rank_info_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO memory_rank_info (doc, id, scope, kind, status, importance, summary)
    SELECT NEW.doc, m.id, m.scope, m.kind, m.status, m.importance, m.lc_kind = 'summary'
    FROM memory_entries AS m WHERE m.id = NEW.id;
    RETURN NULL;
END
$$;
CREATE TRIGGER memory_rank_info_insert AFTER INSERT ON memory_rank_docs
    FOR EACH ROW EXECUTE FUNCTION memory_rank_info_insert();

CREATE FUNCTION memory_rank_info_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM memory_rank_info WHERE doc = OLD.doc;
    RETURN NULL;
END
$$;
CREATE TRIGGER memory_rank_info_delete AFTER DELETE ON memory_rank_docs
    FOR EACH ROW EXECUTE FUNCTION memory_rank_info_delete();

CREATE FUNCTION memory_rank_info_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE memory_rank_info SET scope = NEW.scope, kind = NEW.kind, status = NEW.status,
        importance = NEW.importance, summary = NEW.lc_kind = 'summary'
    WHERE doc = (SELECT doc FROM memory_rank_docs WHERE id = NEW.id);
    RETURN NULL;
END
$$;
CREATE TRIGGER memory_rank_info_update AFTER UPDATE OF scope, kind, status, importance, lc_kind ON memory_entries
    FOR EACH ROW WHEN (OLD.scope IS DISTINCT FROM NEW.scope OR OLD.kind IS DISTINCT FROM NEW.kind
        OR OLD.status IS DISTINCT FROM NEW.status OR OLD.importance IS DISTINCT FROM NEW.importance
        OR OLD.lc_kind IS DISTINCT FROM NEW.lc_kind)
    EXECUTE FUNCTION memory_rank_info_update();

CREATE FUNCTION memory_rank_info_entry_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM memory_rank_info WHERE doc = (SELECT doc FROM memory_rank_docs WHERE id = OLD.id);
    RETURN NULL;
END
$$;
CREATE TRIGGER memory_rank_info_entry_delete AFTER DELETE ON memory_entries
    FOR EACH ROW EXECUTE FUNCTION memory_rank_info_entry_delete();
