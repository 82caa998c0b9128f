-- Supervisor leases: which supervisor processes are alive, when they share a store across hosts.
--
-- A supervisor inserts its row at start, renews it every heartbeat (a few times per ttl) and
-- deletes it when it stops cleanly. A row whose expires_at has passed is a dead owner: any
-- supervisor may then fail that owner's active launches (role_launches.owner) and revoke their
-- grants, and the one on the same Docker engine (engine) removes their containers.
-- Times are seconds since the epoch from the database's own clock (never a host's), so the hosts'
-- clocks need not agree.
CREATE TABLE supervisor_leases (
    owner        TEXT PRIMARY KEY,
    host         TEXT NOT NULL,
    engine       TEXT NOT NULL,
    ttl_seconds  REAL NOT NULL,
    acquired_at  REAL NOT NULL,
    heartbeat_at REAL NOT NULL,
    expires_at   REAL NOT NULL
);
CREATE INDEX supervisor_leases_by_expiry ON supervisor_leases (expires_at);
CREATE INDEX role_launches_by_owner ON role_launches (owner) WHERE owner IS NOT NULL;
