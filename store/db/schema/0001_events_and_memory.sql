-- The append-only event log and the memory store.

CREATE TABLE events (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    type        TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    actor       TEXT NOT NULL,
    task_id     TEXT,
    proposal_id TEXT,
    payload     TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX events_by_proposal ON events (proposal_id, id);
CREATE INDEX events_by_task ON events (task_id, id);
CREATE INDEX events_by_type ON events (type, id);

-- Events are append-only: the database itself refuses changes.
CREATE TRIGGER events_no_update BEFORE UPDATE ON events
BEGIN
    SELECT RAISE(ABORT, 'events are append-only');
END;
CREATE TRIGGER events_no_delete BEFORE DELETE ON events
BEGIN
    SELECT RAISE(ABORT, 'events are append-only');
END;

CREATE TABLE memory_entries (
    id                  TEXT PRIMARY KEY,
    scope               TEXT NOT NULL,
    kind                TEXT NOT NULL,
    title               TEXT NOT NULL,
    body_md             TEXT NOT NULL,
    source_event_id     INTEGER,
    importance          INTEGER NOT NULL DEFAULT 50,
    status              TEXT NOT NULL DEFAULT 'active',
    created_at          TEXT NOT NULL,
    updated_at          TEXT NOT NULL,
    workspace_id        TEXT,
    tags                TEXT NOT NULL DEFAULT '[]',
    provenance          TEXT NOT NULL DEFAULT '{}',
    source_session_id   TEXT,
    source_proposal_id  TEXT,
    confidence          REAL,
    reliability         REAL,
    pinned              INTEGER NOT NULL DEFAULT 0,
    revision            INTEGER NOT NULL DEFAULT 1,
    archived_at         TEXT,
    resynthesis_status  TEXT,
    -- Lower-cased copies (Python's Unicode lower()) that the substring scorer counts in, so that
    -- scoring runs in SQL with SQLite's own replace()/length() and stays Unicode-correct.
    lc_title            TEXT NOT NULL,
    lc_body             TEXT NOT NULL,
    lc_scope            TEXT NOT NULL,
    lc_kind             TEXT NOT NULL
);
CREATE INDEX memory_by_scope_kind ON memory_entries (scope, kind);
CREATE INDEX memory_by_created ON memory_entries (created_at, id);
CREATE INDEX memory_by_status ON memory_entries (status);

CREATE TABLE memory_revisions (
    id          TEXT PRIMARY KEY,
    memory_id   TEXT NOT NULL REFERENCES memory_entries (id),
    revision    INTEGER NOT NULL,
    title       TEXT NOT NULL,
    body_md     TEXT NOT NULL,
    reason      TEXT,
    actor       TEXT NOT NULL,
    provenance  TEXT NOT NULL DEFAULT '{}',
    created_at  TEXT NOT NULL,
    UNIQUE (memory_id, revision)
);

CREATE TABLE memory_aliases (
    alias_id      TEXT PRIMARY KEY,
    canonical_id  TEXT NOT NULL,
    reason        TEXT,
    actor         TEXT,
    created_at    TEXT NOT NULL
);
CREATE INDEX memory_aliases_by_canonical ON memory_aliases (canonical_id);

CREATE TABLE memory_provenance_edges (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    memory_id    TEXT NOT NULL REFERENCES memory_entries (id),
    source_type  TEXT NOT NULL,
    source_id    TEXT NOT NULL,
    relation     TEXT NOT NULL,
    created_at   TEXT NOT NULL
);
CREATE INDEX memory_provenance_by_memory ON memory_provenance_edges (memory_id, created_at, id);

-- Full-text index for the opt-in `match: "ranked"` query (BM25).
CREATE VIRTUAL TABLE memory_fts USING fts5 (
    title, body_md, scope, kind,
    content = 'memory_entries', content_rowid = 'rowid'
);
CREATE TRIGGER memory_fts_insert AFTER INSERT ON memory_entries
BEGIN
    INSERT INTO memory_fts (rowid, title, body_md, scope, kind)
    VALUES (new.rowid, new.title, new.body_md, new.scope, new.kind);
END;
CREATE TRIGGER memory_fts_delete AFTER DELETE ON memory_entries
BEGIN
    INSERT INTO memory_fts (memory_fts, rowid, title, body_md, scope, kind)
    VALUES ('delete', old.rowid, old.title, old.body_md, old.scope, old.kind);
END;
CREATE TRIGGER memory_fts_update AFTER UPDATE OF title, body_md, scope, kind ON memory_entries
BEGIN
    INSERT INTO memory_fts (memory_fts, rowid, title, body_md, scope, kind)
    VALUES ('delete', old.rowid, old.title, old.body_md, old.scope, old.kind);
    INSERT INTO memory_fts (rowid, title, body_md, scope, kind)
    VALUES (new.rowid, new.title, new.body_md, new.scope, new.kind);
END;
