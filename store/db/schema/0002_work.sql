-- Tasks, proposals, immutable patch versions, review rounds, votes, decisions, apply transactions.

CREATE TABLE tasks (
    id          TEXT PRIMARY KEY,
    title       TEXT NOT NULL,
    body_md     TEXT NOT NULL DEFAULT '',
    priority    TEXT NOT NULL DEFAULT 'normal',
    risk        TEXT NOT NULL DEFAULT 'normal',
    status      TEXT NOT NULL DEFAULT 'open',
    assignee    TEXT,
    created_by  TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL
);
CREATE INDEX tasks_by_status ON tasks (status, id);

CREATE TABLE proposals (
    id                  TEXT PRIMARY KEY,
    task_id             TEXT NOT NULL REFERENCES tasks (id),
    agent_id            TEXT NOT NULL,
    title               TEXT NOT NULL,
    summary_md          TEXT NOT NULL DEFAULT '',
    risk                TEXT NOT NULL DEFAULT 'normal',
    affected_resources  TEXT NOT NULL DEFAULT '[]',
    expected_tests      TEXT NOT NULL DEFAULT '[]',
    rollback_notes_md   TEXT NOT NULL DEFAULT '',
    status              TEXT NOT NULL DEFAULT 'pending',
    current_version     INTEGER NOT NULL DEFAULT 0,
    created_by          TEXT NOT NULL,
    created_at          TEXT NOT NULL,
    updated_at          TEXT NOT NULL
);
CREATE INDEX proposals_by_task ON proposals (task_id, id);
CREATE INDEX proposals_by_status ON proposals (status, id);

-- One row per immutable patch file; written only after the file is durable on disk.
CREATE TABLE patch_versions (
    proposal_id  TEXT NOT NULL REFERENCES proposals (id),
    version      INTEGER NOT NULL CHECK (version >= 1),
    sha256       TEXT NOT NULL,
    size_bytes   INTEGER NOT NULL,
    files        TEXT NOT NULL,
    path         TEXT NOT NULL,
    created_by   TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    PRIMARY KEY (proposal_id, version)
);
CREATE TRIGGER patch_versions_no_update BEFORE UPDATE ON patch_versions
BEGIN
    SELECT RAISE(ABORT, 'patch versions are immutable');
END;
CREATE TRIGGER patch_versions_no_delete BEFORE DELETE ON patch_versions
BEGIN
    SELECT RAISE(ABORT, 'patch versions are immutable');
END;

CREATE TABLE review_rounds (
    id             TEXT PRIMARY KEY,
    proposal_id    TEXT NOT NULL REFERENCES proposals (id),
    number         INTEGER NOT NULL,
    patch_version  INTEGER NOT NULL,
    voting_roles   TEXT NOT NULL,
    candidates     TEXT NOT NULL,
    advisory       TEXT NOT NULL,
    status         TEXT NOT NULL DEFAULT 'open',
    close_reason   TEXT,
    opened_by      TEXT NOT NULL,
    opened_at      TEXT NOT NULL,
    closed_at      TEXT,
    UNIQUE (proposal_id, number)
);
-- At most one open round per proposal, enforced by the database.
CREATE UNIQUE INDEX review_rounds_one_open ON review_rounds (proposal_id) WHERE status = 'open';

CREATE TABLE votes (
    id             TEXT PRIMARY KEY,
    proposal_id    TEXT NOT NULL REFERENCES proposals (id),
    round_id       TEXT NOT NULL REFERENCES review_rounds (id),
    agent_id       TEXT NOT NULL,
    role           TEXT NOT NULL,
    patch_version  INTEGER NOT NULL,
    vote           TEXT NOT NULL,
    reason_md      TEXT NOT NULL,
    replaces       TEXT REFERENCES votes (id),
    actor          TEXT NOT NULL,
    created_at     TEXT NOT NULL
);
-- Rowid order is cast order: the latest vote of an agent on a version is the one that counts.
CREATE INDEX votes_by_proposal ON votes (proposal_id, patch_version, agent_id);
CREATE TRIGGER votes_no_update BEFORE UPDATE ON votes
BEGIN
    SELECT RAISE(ABORT, 'votes are immutable');
END;
CREATE TRIGGER votes_no_delete BEFORE DELETE ON votes
BEGIN
    SELECT RAISE(ABORT, 'votes are immutable');
END;

CREATE TABLE decisions (
    id             TEXT PRIMARY KEY,
    task_id        TEXT NOT NULL REFERENCES tasks (id),
    proposal_id    TEXT REFERENCES proposals (id),
    outcome        TEXT NOT NULL,
    rationale_md   TEXT NOT NULL,
    patch_version  INTEGER,
    supersedes     TEXT UNIQUE REFERENCES decisions (id),
    decided_by     TEXT NOT NULL,
    created_at     TEXT NOT NULL
);
CREATE INDEX decisions_by_task ON decisions (task_id, id);
CREATE INDEX decisions_by_proposal ON decisions (proposal_id, id);
CREATE TRIGGER decisions_no_update BEFORE UPDATE ON decisions
BEGIN
    SELECT RAISE(ABORT, 'decisions are immutable; record a new one that supersedes it');
END;
CREATE TRIGGER decisions_no_delete BEFORE DELETE ON decisions
BEGIN
    SELECT RAISE(ABORT, 'decisions are immutable; record a new one that supersedes it');
END;

-- One row per attempt to apply a patch version to the project's files.
CREATE TABLE apply_transactions (
    id             TEXT PRIMARY KEY,
    proposal_id    TEXT NOT NULL REFERENCES proposals (id),
    patch_version  INTEGER NOT NULL,
    patch_sha256   TEXT NOT NULL,
    status         TEXT NOT NULL,
    files          TEXT NOT NULL,
    before_hash    TEXT NOT NULL,
    after_hash     TEXT,
    rollback_path  TEXT NOT NULL,
    error          TEXT,
    actor          TEXT NOT NULL,
    started_at     TEXT NOT NULL,
    finished_at    TEXT
);
CREATE INDEX apply_transactions_by_proposal ON apply_transactions (proposal_id, started_at);
-- A proposal is applied at most once, and never by two writers at a time.
CREATE UNIQUE INDEX apply_transactions_one_live
    ON apply_transactions (proposal_id) WHERE status IN ('applying', 'applied');
