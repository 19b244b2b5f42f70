-- Dependency sources (CONTRACT 29): a finding names where its package was read (`source`:
-- the lockfile, the installed tree's root or the binary; `source_kind`: lockfile, installed
-- or binary; both '' for OS packages), and there is one finding per (project_path, package,
-- version, source) and vulnerability: the same package at two versions in one tree, or in a
-- lockfile and a binary of the same folder, are separate findings. The scan matches OS
-- packages without their version (an upgrade that does not fix keeps the finding), and a
-- row without a source (written before this) is adopted by the first source that finds the
-- same package and vulnerability, keeping its history and acknowledgement.
-- SQLite cannot drop a UNIQUE constraint: the table is rebuilt. Keep in step with ../postgres/.
CREATE TABLE cve_findings_new (
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
    suppression_id BLOB,
    binaries TEXT NOT NULL DEFAULT '[]',
    source TEXT NOT NULL DEFAULT '',
    source_kind TEXT NOT NULL DEFAULT '',
    UNIQUE (agent_id, ecosystem, package, project_path, source, installed_version, vuln_id)
);
INSERT INTO cve_findings_new (id, tenant_id, agent_id, ecosystem, package, project_path, vuln_id,
    aliases, installed_version, fixed_versions, severity, severity_rank, cvss_score, summary,
    first_seen_at, last_seen_at, fixed_at, acknowledged_at, acknowledged_by, ack_reason,
    suppression_id, binaries)
SELECT id, tenant_id, agent_id, ecosystem, package, project_path, vuln_id, aliases,
    installed_version, fixed_versions, severity, severity_rank, cvss_score, summary,
    first_seen_at, last_seen_at, fixed_at, acknowledged_at, acknowledged_by, ack_reason,
    suppression_id, binaries
FROM cve_findings;
DROP TABLE cve_findings;
ALTER TABLE cve_findings_new RENAME TO cve_findings;
CREATE INDEX cve_findings_tenant ON cve_findings (tenant_id, severity_rank, id);
CREATE INDEX cve_findings_suppression ON cve_findings (suppression_id);
-- What each source of a host's last scan could check: a JSON array of {source, source_kind,
-- format, ecosystem, packages, status, reason?}. Every host is scanned again (its stored
-- advisory generation no longer matches) so the sources appear without waiting.
ALTER TABLE cve_scans ADD COLUMN sources TEXT NOT NULL DEFAULT '[]';
UPDATE cve_scans SET advisories = '';
