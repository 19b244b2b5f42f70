-- Agent WebSocket connections, emergency actions (CONTRACT 5) and the transparency log
-- (CONTRACT 5a). Keep in step with ../sqlite/.

-- Which hub process holds each agent's WebSocket.
CREATE TABLE agent_connections (
    agent_id UUID PRIMARY KEY REFERENCES agents(id) ON DELETE CASCADE,
    instance TEXT NOT NULL,
    connected_at TIMESTAMPTZ NOT NULL
);

-- Actions outlive their agent: no foreign key on agent_id.
CREATE TABLE actions (
    jti TEXT PRIMARY KEY,
    tenant_id UUID NOT NULL REFERENCES tenants(id),
    agent_id UUID NOT NULL,
    app_id UUID,
    act TEXT NOT NULL,
    status TEXT NOT NULL,
    requested_by TEXT NOT NULL,
    reason TEXT NOT NULL,
    exit_code BIGINT,
    stdout TEXT,
    stderr TEXT,
    refused_reason TEXT,
    created_at TIMESTAMPTZ NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL,
    finished_at TIMESTAMPTZ
);
CREATE INDEX actions_tenant ON actions (tenant_id, created_at DESC);

-- created_at is the RFC 3339 text that is hashed, kept as text on both engines.
CREATE TABLE transparency_log (
    tenant_id UUID NOT NULL REFERENCES tenants(id),
    seq BIGINT NOT NULL,
    kind TEXT NOT NULL,
    subject_ref TEXT NOT NULL,
    payload TEXT NOT NULL,
    prev_hash TEXT NOT NULL,
    entry_hash TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (tenant_id, seq)
);
CREATE FUNCTION transparency_log_is_append_only() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'transparency_log is append-only';
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER transparency_log_no_change BEFORE UPDATE OR DELETE ON transparency_log
    FOR EACH ROW EXECUTE FUNCTION transparency_log_is_append_only();
