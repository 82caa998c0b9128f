-- PostgreSQL twin of schema/0002_work.sql (see 0001 for the dialect differences).

CREATE TABLE tasks (
    id          TEXT COLLATE "C" PRIMARY KEY,
    title       TEXT COLLATE "C" NOT NULL,
    body_md     TEXT COLLATE "C" NOT NULL DEFAULT '',
    priority    TEXT COLLATE "C" NOT NULL DEFAULT 'normal',
    risk        TEXT COLLATE "C" NOT NULL DEFAULT 'normal',
    status      TEXT COLLATE "C" NOT NULL DEFAULT 'open',
    assignee    TEXT COLLATE "C",
    created_by  TEXT COLLATE "C" NOT NULL,
    created_at  TEXT COLLATE "C" NOT NULL,
    updated_at  TEXT COLLATE "C" NOT NULL
);
CREATE INDEX tasks_by_status ON tasks (status, id);

CREATE TABLE proposals (
    id                  TEXT COLLATE "C" PRIMARY KEY,
    task_id             TEXT COLLATE "C" NOT NULL REFERENCES tasks (id),
    agent_id            TEXT COLLATE "C" NOT NULL,
    title               TEXT COLLATE "C" NOT NULL,
    summary_md          TEXT COLLATE "C" NOT NULL DEFAULT '',
    risk                TEXT COLLATE "C" NOT NULL DEFAULT 'normal',
    affected_resources  TEXT COLLATE "C" NOT NULL DEFAULT '[]',
    expected_tests      TEXT COLLATE "C" NOT NULL DEFAULT '[]',
    rollback_notes_md   TEXT COLLATE "C" NOT NULL DEFAULT '',
    status              TEXT COLLATE "C" NOT NULL DEFAULT 'pending',
    current_version     BIGINT NOT NULL DEFAULT 0,
    created_by          TEXT COLLATE "C" NOT NULL,
    created_at          TEXT COLLATE "C" NOT NULL,
    updated_at          TEXT COLLATE "C" NOT NULL
);
CREATE INDEX proposals_by_task ON proposals (task_id, id);
CREATE INDEX proposals_by_status ON proposals (status, id);

CREATE TABLE patch_versions (
    proposal_id  TEXT COLLATE "C" NOT NULL REFERENCES proposals (id),
    version      BIGINT NOT NULL CHECK (version >= 1),
    sha256       TEXT COLLATE "C" NOT NULL,
    size_bytes   BIGINT NOT NULL,
    files        TEXT COLLATE "C" NOT NULL,
    path         TEXT COLLATE "C" NOT NULL,
    created_by   TEXT COLLATE "C" NOT NULL,
    created_at   TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (proposal_id, version)
);
CREATE TRIGGER patch_versions_no_update BEFORE UPDATE ON patch_versions
    FOR EACH ROW EXECUTE FUNCTION refuse_change('patch versions are immutable');
CREATE TRIGGER patch_versions_no_delete BEFORE DELETE ON patch_versions
    FOR EACH ROW EXECUTE FUNCTION refuse_change('patch versions are immutable');

CREATE TABLE review_rounds (
    id             TEXT COLLATE "C" PRIMARY KEY,
    proposal_id    TEXT COLLATE "C" NOT NULL REFERENCES proposals (id),
    number         BIGINT NOT NULL,
    patch_version  BIGINT NOT NULL,
    voting_roles   TEXT COLLATE "C" NOT NULL,
    candidates     TEXT COLLATE "C" NOT NULL,
    advisory       TEXT COLLATE "C" NOT NULL,
    status         TEXT COLLATE "C" NOT NULL DEFAULT 'open',
    close_reason   TEXT COLLATE "C",
    opened_by      TEXT COLLATE "C" NOT NULL,
    opened_at      TEXT COLLATE "C" NOT NULL,
    closed_at      TEXT COLLATE "C",
    UNIQUE (proposal_id, number)
);
CREATE UNIQUE INDEX review_rounds_one_open ON review_rounds (proposal_id) WHERE status = 'open';

CREATE TABLE votes (
    rowid          BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
    id             TEXT COLLATE "C" PRIMARY KEY,
    proposal_id    TEXT COLLATE "C" NOT NULL REFERENCES proposals (id),
    round_id       TEXT COLLATE "C" NOT NULL REFERENCES review_rounds (id),
    agent_id       TEXT COLLATE "C" NOT NULL,
    role           TEXT COLLATE "C" NOT NULL,
    patch_version  BIGINT NOT NULL,
    vote           TEXT COLLATE "C" NOT NULL,
    reason_md      TEXT COLLATE "C" NOT NULL,
    replaces       TEXT COLLATE "C" REFERENCES votes (id),
    actor          TEXT COLLATE "C" NOT NULL,
    created_at     TEXT COLLATE "C" NOT NULL
);
-- rowid order is cast order: the latest vote of an agent on a version is the one that counts.
CREATE INDEX votes_by_proposal ON votes (proposal_id, patch_version, agent_id);
CREATE TRIGGER votes_no_update BEFORE UPDATE ON votes
    FOR EACH ROW EXECUTE FUNCTION refuse_change('votes are immutable');
CREATE TRIGGER votes_no_delete BEFORE DELETE ON votes
    FOR EACH ROW EXECUTE FUNCTION refuse_change('votes are immutable');

CREATE TABLE decisions (
    rowid          BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
    id             TEXT COLLATE "C" PRIMARY KEY,
    task_id        TEXT COLLATE "C" NOT NULL REFERENCES tasks (id),
    proposal_id    TEXT COLLATE "C" REFERENCES proposals (id),
    outcome        TEXT COLLATE "C" NOT NULL,
    rationale_md   TEXT COLLATE "C" NOT NULL,
    patch_version  BIGINT,
    supersedes     TEXT COLLATE "C" UNIQUE REFERENCES decisions (id),
    decided_by     TEXT COLLATE "C" NOT NULL,
    created_at     TEXT COLLATE "C" NOT NULL
);
CREATE INDEX decisions_by_task ON decisions (task_id, id);
CREATE INDEX decisions_by_proposal ON decisions (proposal_id, id);
CREATE TRIGGER decisions_no_update BEFORE UPDATE ON decisions
    FOR EACH ROW EXECUTE FUNCTION refuse_change('decisions are immutable; record a new one that supersedes it');
CREATE TRIGGER decisions_no_delete BEFORE DELETE ON decisions
    FOR EACH ROW EXECUTE FUNCTION refuse_change('decisions are immutable; record a new one that supersedes it');

CREATE TABLE apply_transactions (
    id             TEXT COLLATE "C" PRIMARY KEY,
    proposal_id    TEXT COLLATE "C" NOT NULL REFERENCES proposals (id),
    patch_version  BIGINT NOT NULL,
    patch_sha256   TEXT COLLATE "C" NOT NULL,
    status         TEXT COLLATE "C" NOT NULL,
    files          TEXT COLLATE "C" NOT NULL,
    before_hash    TEXT COLLATE "C" NOT NULL,
    after_hash     TEXT COLLATE "C",
    rollback_path  TEXT COLLATE "C" NOT NULL,
    error          TEXT COLLATE "C",
    actor          TEXT COLLATE "C" NOT NULL,
    started_at     TEXT COLLATE "C" NOT NULL,
    finished_at    TEXT COLLATE "C"
);
CREATE INDEX apply_transactions_by_proposal ON apply_transactions (proposal_id, started_at);
CREATE UNIQUE INDEX apply_transactions_one_live
    ON apply_transactions (proposal_id) WHERE status IN ('applying', 'applied');
