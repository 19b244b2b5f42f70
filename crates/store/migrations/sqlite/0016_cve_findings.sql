-- Vulnerability findings (CONTRACT 15): one row per host, package (and project for a
-- lockfile dependency, '' for OS packages) and vulnerability, kept after it is fixed
-- (fixed_at) so its history stays. cve_scans says what each host's last scan saw.
-- Keep in step with ../postgres/.
CREATE TABLE cve_findings (
    id BLOB PRIMARY KEY,
    tenant_id BLOB NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    agent_id BLOB NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
    ecosystem TEXT NOT NULL,
    package TEXT NOT NULL,
    project_path TEXT NOT NULL,
    vuln_id TEXT NOT NULL,
    aliases TEXT NOT NULL,
    installed_version TEXT NOT NULL,
    fixed_versions TEXT NOT NULL,
    severity TEXT NOT NULL,
    severity_rank INTEGER NOT NULL,
    cvss_score REAL,
    summary TEXT NOT NULL,
    first_seen_at TEXT NOT NULL,
    last_seen_at TEXT NOT NULL,
    fixed_at TEXT,
    acknowledged_at TEXT,
    acknowledged_by TEXT,
    ack_reason TEXT,
    UNIQUE (agent_id, ecosystem, package, project_path, vuln_id)
);
CREATE INDEX cve_findings_tenant ON cve_findings (tenant_id, severity_rank, id);
CREATE TABLE cve_scans (
    agent_id BLOB PRIMARY KEY REFERENCES agents(id) ON DELETE CASCADE,
    tenant_id BLOB NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    scanned_at TEXT NOT NULL,
    inventory_id INTEGER NOT NULL,
    packages INTEGER NOT NULL,
    not_covered TEXT NOT NULL
);
