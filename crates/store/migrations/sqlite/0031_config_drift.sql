-- Configuration drift (CONTRACT 20): what governance watches on each host, the service
-- accounts whose rebases raise no ticket, each watched path's baseline and latest report,
-- the patterns' first reports (a file appearing under a glob later is `new`), and rebases.
ALTER TABLE agents ADD COLUMN config_paths TEXT;
ALTER TABLE agents ADD COLUMN config_scan_interval_secs BIGINT NOT NULL DEFAULT 3600;
ALTER TABLE api_tokens ADD COLUMN service TEXT;
CREATE TABLE drift_files (
    tenant_id BLOB NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    agent_id BLOB NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
    path TEXT NOT NULL,
    status TEXT NOT NULL,
    baseline TEXT,
    baseline_at TEXT,
    current TEXT,
    reported_at TEXT NOT NULL,
    changed_at TEXT NOT NULL,
    explained TEXT,
    PRIMARY KEY (agent_id, path)
);
CREATE INDEX drift_files_tenant ON drift_files (tenant_id, agent_id);
CREATE TABLE drift_patterns (
    agent_id BLOB NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
    pattern TEXT NOT NULL,
    first_reported_at TEXT NOT NULL,
    PRIMARY KEY (agent_id, pattern)
);
CREATE TABLE drift_rebases (
    id BLOB PRIMARY KEY,
    tenant_id BLOB NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    agent_id BLOB NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
    paths TEXT NOT NULL,
    by_actor TEXT NOT NULL,
    infrastructure INTEGER NOT NULL,
    reason TEXT NOT NULL,
    at TEXT NOT NULL
);
CREATE INDEX drift_rebases_agent ON drift_rebases (agent_id, at);
