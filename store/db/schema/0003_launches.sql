-- Role launches: one row per container launch, written by the supervisor's launcher.
--
-- The status moves requested -> starting -> running -> exited|failed|timeout|cancelled (store/launches.py
-- holds the table of allowed moves); every move commits together with its role.* event. The container
-- id is committed when the container is created, before it is started, so that a crash in between
-- leaves a row the reaper can act on. proposal_id has no foreign key: proposals live in another
-- migration, and a launch row must outlive any clean-up of the proposal tables.

CREATE TABLE role_launches (
    id            TEXT PRIMARY KEY,
    role          TEXT NOT NULL,
    agent_id      TEXT NOT NULL,
    proposal_id   TEXT NOT NULL,
    task_id       TEXT,
    image         TEXT NOT NULL,
    container_id  TEXT,
    status        TEXT NOT NULL CHECK (
        status IN ('requested', 'starting', 'running', 'exited', 'failed', 'timeout', 'cancelled')
    ),
    exit_code     INTEGER,
    reason        TEXT,
    error         TEXT,
    requested_at  TEXT NOT NULL,
    started_at    TEXT,
    ended_at      TEXT,
    updated_at    TEXT NOT NULL,
    log_tail      TEXT,
    provider      TEXT,
    usage         TEXT
);
CREATE INDEX role_launches_by_status ON role_launches (status, requested_at);
CREATE INDEX role_launches_by_proposal ON role_launches (proposal_id, requested_at);
CREATE UNIQUE INDEX role_launches_by_container ON role_launches (container_id) WHERE container_id IS NOT NULL;
