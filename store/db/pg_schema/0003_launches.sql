-- PostgreSQL twin of schema/0003_launches.sql (see 0001 for the dialect differences).

CREATE TABLE role_launches (
    id            TEXT COLLATE "C" PRIMARY KEY,
    role          TEXT COLLATE "C" NOT NULL,
    agent_id      TEXT COLLATE "C" NOT NULL,
    proposal_id   TEXT COLLATE "C" NOT NULL,
    task_id       TEXT COLLATE "C",
    image         TEXT COLLATE "C" NOT NULL,
    container_id  TEXT COLLATE "C",
    status        TEXT COLLATE "C" NOT NULL CHECK (
        status IN ('requested', 'starting', 'running', 'exited', 'failed', 'timeout', 'cancelled')
    ),
    exit_code     BIGINT,
    reason        TEXT COLLATE "C",
    error         TEXT COLLATE "C",
    requested_at  TEXT COLLATE "C" NOT NULL,
    started_at    TEXT COLLATE "C",
    ended_at      TEXT COLLATE "C",
    updated_at    TEXT COLLATE "C" NOT NULL,
    log_tail      TEXT COLLATE "C",
    provider      TEXT COLLATE "C",
    usage         TEXT COLLATE "C"
);
CREATE INDEX role_launches_by_status ON role_launches (status, requested_at);
CREATE INDEX role_launches_by_proposal ON role_launches (proposal_id, requested_at);
CREATE UNIQUE INDEX role_launches_by_container ON role_launches (container_id) WHERE container_id IS NOT NULL;
