-- PostgreSQL twin of schema/0008_agent_credentials.sql.
ALTER TABLE operator_tokens ADD COLUMN agent_id TEXT COLLATE "C";
ALTER TABLE events ADD COLUMN credential_id TEXT COLLATE "C";
ALTER TABLE audit_log ADD COLUMN credential_id TEXT COLLATE "C";
ALTER TABLE memory_entries ADD COLUMN written_by TEXT COLLATE "C";
