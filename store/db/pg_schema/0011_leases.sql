-- PostgreSQL twin of schema/0011_leases.sql. Times come from clock_timestamp() on the server.
CREATE TABLE supervisor_leases (
    owner        TEXT COLLATE "C" PRIMARY KEY,
    host         TEXT COLLATE "C" NOT NULL,
    engine       TEXT COLLATE "C" NOT NULL,
    ttl_seconds  DOUBLE PRECISION NOT NULL,
    acquired_at  DOUBLE PRECISION NOT NULL,
    heartbeat_at DOUBLE PRECISION NOT NULL,
    expires_at   DOUBLE PRECISION NOT NULL
);
CREATE INDEX supervisor_leases_by_expiry ON supervisor_leases (expires_at);
CREATE INDEX role_launches_by_owner ON role_launches (owner) WHERE owner IS NOT NULL;
