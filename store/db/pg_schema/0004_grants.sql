-- PostgreSQL twin of schema/0004_grants.sql (see 0001 for the dialect differences).

CREATE TABLE capability_grants (
    id              TEXT COLLATE "C" PRIMARY KEY,
    role            TEXT COLLATE "C" NOT NULL,
    agent_id        TEXT COLLATE "C" NOT NULL,
    proposal_id     TEXT COLLATE "C" NOT NULL,
    task_id         TEXT COLLATE "C" NOT NULL,
    scopes          TEXT COLLATE "C" NOT NULL,
    tools           TEXT COLLATE "C" NOT NULL,
    launch_id       TEXT COLLATE "C",
    token_sha256    TEXT COLLATE "C" NOT NULL UNIQUE,
    created_by      TEXT COLLATE "C" NOT NULL,
    created_at      TEXT COLLATE "C" NOT NULL,
    expires_at      TEXT COLLATE "C" NOT NULL,
    revoked_at      TEXT COLLATE "C",
    revoked_reason  TEXT COLLATE "C"
);
CREATE INDEX capability_grants_by_proposal ON capability_grants (proposal_id, created_at);
CREATE INDEX capability_grants_by_launch ON capability_grants (launch_id);
CREATE INDEX capability_grants_active ON capability_grants (revoked_at, expires_at);

CREATE TRIGGER capability_grants_binding_fixed BEFORE UPDATE OF
    id, role, agent_id, proposal_id, task_id, scopes, tools, token_sha256, created_by, created_at, expires_at
ON capability_grants
    FOR EACH ROW EXECUTE FUNCTION refuse_change('a capability grant is immutable except for its revocation');

CREATE TABLE operator_tokens (
    id              TEXT COLLATE "C" PRIMARY KEY,
    name            TEXT COLLATE "C" NOT NULL,
    token_sha256    TEXT COLLATE "C" NOT NULL UNIQUE,
    created_by      TEXT COLLATE "C" NOT NULL,
    created_at      TEXT COLLATE "C" NOT NULL,
    expires_at      TEXT COLLATE "C",
    revoked_at      TEXT COLLATE "C",
    revoked_reason  TEXT COLLATE "C"
);
CREATE INDEX operator_tokens_by_name ON operator_tokens (name);
