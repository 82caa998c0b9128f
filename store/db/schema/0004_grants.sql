-- Capability grants (one per role launch, bound to one proposal) and operator tokens.
-- Only the SHA-256 of a token is stored; the raw token exists only in the answer that minted it.
-- No foreign keys to proposals: that table belongs to another migration, and the grant store
-- checks the proposal inside the transaction that mints the grant.

CREATE TABLE capability_grants (
    id              TEXT PRIMARY KEY,
    role            TEXT NOT NULL,
    agent_id        TEXT NOT NULL,
    proposal_id     TEXT NOT NULL,
    task_id         TEXT NOT NULL,
    scopes          TEXT NOT NULL,          -- JSON array, sorted
    tools           TEXT NOT NULL,          -- JSON array, sorted
    launch_id       TEXT,
    token_sha256    TEXT NOT NULL UNIQUE,   -- hex digest
    created_by      TEXT NOT NULL,
    created_at      TEXT NOT NULL,
    expires_at      TEXT NOT NULL,
    revoked_at      TEXT,
    revoked_reason  TEXT
);
CREATE INDEX capability_grants_by_proposal ON capability_grants (proposal_id, created_at);
CREATE INDEX capability_grants_by_launch ON capability_grants (launch_id);
CREATE INDEX capability_grants_active ON capability_grants (revoked_at, expires_at);

-- A grant's binding never changes after it is minted; only revocation may be recorded.
CREATE TRIGGER capability_grants_binding_fixed BEFORE UPDATE OF
    id, role, agent_id, proposal_id, task_id, scopes, tools, token_sha256, created_by, created_at, expires_at
ON capability_grants
BEGIN
    SELECT RAISE(ABORT, 'a capability grant is immutable except for its revocation');
END;

CREATE TABLE operator_tokens (
    id              TEXT PRIMARY KEY,
    name            TEXT NOT NULL,
    token_sha256    TEXT NOT NULL UNIQUE,
    created_by      TEXT NOT NULL,
    created_at      TEXT NOT NULL,
    expires_at      TEXT,                   -- NULL: no expiry
    revoked_at      TEXT,
    revoked_reason  TEXT
);
CREATE INDEX operator_tokens_by_name ON operator_tokens (name);
