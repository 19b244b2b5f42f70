-- Emergency console sessions (CONTRACT 22): who opened which shell on which host and why,
-- how it ended, and the recording's size and SHA-256 (the cast itself is a file).
CREATE TABLE console_sessions (
    id BLOB PRIMARY KEY,
    tenant_id BLOB NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    agent_id BLOB NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
    user_id BLOB NOT NULL,
    reason TEXT NOT NULL,
    status TEXT NOT NULL,
    end_reason TEXT,
    cols BIGINT NOT NULL,
    rows BIGINT NOT NULL,
    jti TEXT NOT NULL,
    attached BIGINT NOT NULL DEFAULT 0,
    started_at TEXT NOT NULL,
    ended_at TEXT,
    exit_code BIGINT,
    recording_bytes BIGINT NOT NULL DEFAULT 0,
    recording_sha256 TEXT
);
CREATE INDEX console_sessions_tenant ON console_sessions (tenant_id, started_at);
CREATE INDEX console_sessions_jti ON console_sessions (jti);
