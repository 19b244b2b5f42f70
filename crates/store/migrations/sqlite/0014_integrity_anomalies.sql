-- Integrity anomalies (CONTRACT 14): refused client certificates, bad signatures from pinned
-- agents and the like, each shown to operators until resolved. The agent is not a foreign key:
-- an anomaly outlives a deleted agent. Keep in step with ../postgres/.
CREATE TABLE integrity_anomalies (
    id BLOB PRIMARY KEY,
    tenant_id BLOB NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    agent_id BLOB,
    kind TEXT NOT NULL,
    detail TEXT NOT NULL,
    evidence TEXT NOT NULL,
    created_at TEXT NOT NULL,
    resolved_at TEXT,
    resolved_by TEXT
);
CREATE INDEX integrity_anomalies_tenant ON integrity_anomalies (tenant_id, created_at);
CREATE INDEX integrity_anomalies_open ON integrity_anomalies (tenant_id, agent_id, kind) WHERE resolved_at IS NULL;
