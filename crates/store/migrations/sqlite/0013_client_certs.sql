-- Client certificates the hub CA issued to agents (CONTRACT 12, 14). At most one active
-- (not revoked) certificate per agent, held by the partial unique index. The rows outlive
-- their agent (no foreign key): a deleted agent's certificates stay revoked in the CRL until
-- they expire. Keep in step with
-- ../postgres/.
CREATE TABLE client_certs (
    serial TEXT PRIMARY KEY,
    tenant_id BLOB NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    agent_id BLOB NOT NULL,
    fingerprint_sha256 TEXT NOT NULL UNIQUE,
    certificate_pem TEXT NOT NULL,
    key_generated_by_hub INTEGER NOT NULL DEFAULT FALSE,
    not_before TEXT NOT NULL,
    not_after TEXT NOT NULL,
    created_at TEXT NOT NULL,
    revoked_at TEXT,
    revoke_reason TEXT,
    last_seen_at TEXT
);
CREATE UNIQUE INDEX client_certs_one_active ON client_certs (agent_id) WHERE revoked_at IS NULL;
CREATE INDEX client_certs_agent ON client_certs (tenant_id, agent_id, created_at);
CREATE INDEX client_certs_revoked ON client_certs (revoked_at) WHERE revoked_at IS NOT NULL;
