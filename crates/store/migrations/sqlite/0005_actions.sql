-- Agent WebSocket connections, emergency actions (CONTRACT 5) and the transparency log
-- (CONTRACT 5a). Keep in step with ../postgres/.

-- Which hub process holds each agent's WebSocket.
CREATE TABLE agent_connections (
    agent_id BLOB PRIMARY KEY REFERENCES agents(id) ON DELETE CASCADE,
    instance TEXT NOT NULL,
    connected_at TEXT NOT NULL
);

-- Actions outlive their agent: no foreign key on agent_id.
CREATE TABLE actions (
    jti TEXT PRIMARY KEY,
    tenant_id BLOB NOT NULL REFERENCES tenants(id),
    agent_id BLOB NOT NULL,
    app_id BLOB,
    act TEXT NOT NULL,
    status TEXT NOT NULL,
    requested_by TEXT NOT NULL,
    reason TEXT NOT NULL,
    exit_code BIGINT,
    stdout TEXT,
    stderr TEXT,
    refused_reason TEXT,
    created_at TEXT NOT NULL,
    expires_at TEXT NOT NULL,
    finished_at TEXT
);
CREATE INDEX actions_tenant ON actions (tenant_id, created_at DESC);

-- created_at is the RFC 3339 text that is hashed, kept as text on both engines.
CREATE TABLE transparency_log (
    tenant_id BLOB NOT NULL REFERENCES tenants(id),
    seq BIGINT NOT NULL,
    kind TEXT NOT NULL,
    subject_ref TEXT NOT NULL,
    payload TEXT NOT NULL,
    prev_hash TEXT NOT NULL,
    entry_hash TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (tenant_id, seq)
);
CREATE TRIGGER transparency_log_no_update BEFORE UPDATE ON transparency_log
BEGIN
    SELECT RAISE(ABORT, 'transparency_log is append-only');
END;
CREATE TRIGGER transparency_log_no_delete BEFORE DELETE ON transparency_log
BEGIN
    SELECT RAISE(ABORT, 'transparency_log is append-only');
END;
