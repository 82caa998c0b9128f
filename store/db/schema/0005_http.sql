-- The HTTP API and the web console: audit rows, idempotency keys, resynthesis requests and
-- console sessions.

-- One row per mutation made through the HTTP API or the console, written in the same transaction
-- as the change and its event (event_id), so a 2xx answer proves all three exist.
CREATE TABLE audit_log (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    created_at   TEXT NOT NULL,
    actor        TEXT NOT NULL,
    action       TEXT NOT NULL,
    target_type  TEXT NOT NULL,
    target_id    TEXT NOT NULL,
    event_id     INTEGER REFERENCES events (id),
    details      TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX audit_by_target ON audit_log (target_type, target_id, id);

CREATE TRIGGER audit_no_update BEFORE UPDATE ON audit_log
BEGIN
    SELECT RAISE(ABORT, 'the audit log is append-only');
END;
CREATE TRIGGER audit_no_delete BEFORE DELETE ON audit_log
BEGIN
    SELECT RAISE(ABORT, 'the audit log is append-only');
END;

-- Idempotency-Key replay: the first answer to (actor, key), stored in the transaction of the
-- change it describes. A replay with the same route and request hash returns it; anything else
-- under the same key is a conflict.
CREATE TABLE idempotency_keys (
    actor            TEXT NOT NULL,
    key              TEXT NOT NULL,
    route            TEXT NOT NULL,
    request_sha256   TEXT NOT NULL,
    response_status  INTEGER NOT NULL,
    response_body    TEXT NOT NULL,
    created_at       TEXT NOT NULL,
    PRIMARY KEY (actor, key)
);

-- Resynthesis requests: requested -> completed | failed, each move with its event.
CREATE TABLE memory_resynthesis_requests (
    id               TEXT PRIMARY KEY,
    memory_id        TEXT NOT NULL REFERENCES memory_entries (id),
    status           TEXT NOT NULL CHECK (status IN ('requested', 'completed', 'failed')),
    reason           TEXT,
    base_revision    INTEGER NOT NULL,
    requested_by     TEXT NOT NULL,
    requested_at     TEXT NOT NULL,
    provider         TEXT,
    finished_at      TEXT,
    result_revision  INTEGER,
    error            TEXT
);
CREATE INDEX resynthesis_by_memory ON memory_resynthesis_requests (memory_id, requested_at);
CREATE INDEX resynthesis_by_status ON memory_resynthesis_requests (status, requested_at);
-- At most one open request per entry.
CREATE UNIQUE INDEX resynthesis_one_open ON memory_resynthesis_requests (memory_id)
    WHERE status = 'requested';

-- Restore returns an archived entry to the status it had before (the seed always chose 'active').
ALTER TABLE memory_entries ADD COLUMN status_before_archive TEXT;

-- Console sessions: the cookie holds a random session ID; only its SHA-256 is stored. A session
-- lives no longer than its operator token: both are checked on every request.
CREATE TABLE console_sessions (
    id_sha256   TEXT PRIMARY KEY,
    token_id    TEXT NOT NULL REFERENCES operator_tokens (id),
    name        TEXT NOT NULL,
    csrf_token  TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    expires_at  TEXT NOT NULL,
    ended_at    TEXT
);
CREATE INDEX console_sessions_by_token ON console_sessions (token_id);
