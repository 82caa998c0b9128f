-- Agent credentials (docs/agents.md): a bearer token may be bound to one roster agent; NULL keeps
-- it an operator token. Every event and audit row names the credential its change came through
-- (a token or grant ID, or 'local' for the operator's own stdio and CLI); NULL on rows written
-- before this migration. A memory entry records who wrote it, from the caller's credential and
-- never from an argument: 'grant:<C-id>', 'agent:<agent id>' or 'operator:<name>' (NULL before).
ALTER TABLE operator_tokens ADD COLUMN agent_id TEXT;
ALTER TABLE events ADD COLUMN credential_id TEXT;
ALTER TABLE audit_log ADD COLUMN credential_id TEXT;
ALTER TABLE memory_entries ADD COLUMN written_by TEXT;
