-- Client certificates the hub CA issued to agents (CONTRACT 12, 14). At most one active
-- (not revoked) certificate per agent, held by the partial unique index. The rows outlive
-- their agent (no foreign key): a deleted agent's certificates stay revoked in the CRL until
-- they expire. Keep in step with
-- ../sqlite/.
CREATE TABLE client_certs (
    serial TEXT PRIMARY KEY,
    tenant_id UUID NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    agent_id UUID NOT NULL,
    fingerprint_sha256 TEXT NOT NULL UNIQUE,
    certificate_pem TEXT NOT NULL,
    key_generated_by_hub BOOLEAN NOT NULL DEFAULT FALSE,
    not_before TIMESTAMPTZ NOT NULL,
    not_after TIMESTAMPTZ NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    revoked_at TIMESTAMPTZ,
    revoke_reason TEXT,
    last_seen_at TIMESTAMPTZ
);
CREATE UNIQUE INDEX client_certs_one_active ON client_certs (agent_id) WHERE revoked_at IS NULL;
CREATE INDEX client_certs_agent ON client_certs (tenant_id, agent_id, created_at);
CREATE INDEX client_certs_revoked ON client_certs (revoked_at) WHERE revoked_at IS NOT NULL;
