-- Cloud discovery (CONTRACT 23): accounts with sealed credentials, discovery runs, the
-- resources seen with their agent coverage, and findings with their lifecycle. Hosts keep
-- what a resource is matched by (addresses and cloud instance id of the latest inventory).
ALTER TABLE agents ADD COLUMN net_addrs TEXT NOT NULL DEFAULT '[]';
ALTER TABLE agents ADD COLUMN cloud_instance_id TEXT;
-- The install command of an uncovered machine carries a single-use enrollment token.
ALTER TABLE enrollment_tokens ADD COLUMN single_use BOOLEAN NOT NULL DEFAULT 0;
ALTER TABLE enrollment_tokens ADD COLUMN used_at TEXT;

CREATE TABLE cloud_accounts (
    id BLOB PRIMARY KEY,
    tenant_id BLOB NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    provider TEXT NOT NULL,
    name TEXT NOT NULL,
    regions TEXT NOT NULL,
    endpoint TEXT,
    credentials_sealed BLOB NOT NULL,
    status TEXT NOT NULL,
    created_at TEXT NOT NULL,
    last_run_at TEXT
);
CREATE INDEX cloud_accounts_tenant ON cloud_accounts (tenant_id);

CREATE TABLE cloud_runs (
    id BLOB PRIMARY KEY,
    tenant_id BLOB NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    account_id BLOB NOT NULL REFERENCES cloud_accounts(id) ON DELETE CASCADE,
    status TEXT NOT NULL,
    started_at TEXT NOT NULL,
    finished_at TEXT,
    resources_seen BIGINT NOT NULL DEFAULT 0,
    added BIGINT NOT NULL DEFAULT 0,
    changed BIGINT NOT NULL DEFAULT 0,
    removed BIGINT NOT NULL DEFAULT 0,
    errors TEXT NOT NULL DEFAULT '[]'
);
CREATE INDEX cloud_runs_account ON cloud_runs (account_id, started_at);
CREATE INDEX cloud_runs_tenant ON cloud_runs (tenant_id, started_at);

CREATE TABLE cloud_resources (
    id BLOB PRIMARY KEY,
    tenant_id BLOB NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    account_id BLOB NOT NULL REFERENCES cloud_accounts(id) ON DELETE CASCADE,
    provider TEXT NOT NULL,
    type TEXT NOT NULL,
    provider_id TEXT NOT NULL,
    name TEXT NOT NULL,
    region TEXT NOT NULL,
    state TEXT NOT NULL,
    public_ips TEXT NOT NULL,
    private_ips TEXT NOT NULL,
    tags TEXT NOT NULL,
    facts TEXT NOT NULL,
    first_seen_at TEXT NOT NULL,
    last_seen_at TEXT NOT NULL,
    removed_at TEXT,
    UNIQUE (account_id, provider_id)
);
CREATE INDEX cloud_resources_tenant ON cloud_resources (tenant_id, account_id);

CREATE TABLE cloud_findings (
    id BLOB PRIMARY KEY,
    tenant_id BLOB NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    account_id BLOB NOT NULL REFERENCES cloud_accounts(id) ON DELETE CASCADE,
    resource_id BLOB NOT NULL REFERENCES cloud_resources(id) ON DELETE CASCADE,
    rule TEXT NOT NULL,
    severity TEXT NOT NULL,
    status TEXT NOT NULL,
    detail TEXT NOT NULL,
    first_seen_at TEXT NOT NULL,
    resolved_at TEXT
);
CREATE INDEX cloud_findings_tenant ON cloud_findings (tenant_id, status);
CREATE INDEX cloud_findings_resource ON cloud_findings (resource_id, rule);
