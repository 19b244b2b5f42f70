-- CVE suppressions (SPEC 2.5, CONTRACT 15): a package of an ecosystem in a version range
-- (optionally one vulnerability) accepted for a reason until a date. `package_key` is the
-- name as the scan compares it (PEP 503 for PyPI). A finding's `suppression_id` is the
-- matching suppression with the latest expiry when it was last evaluated (at a scan, at a
-- suppression's creation or deletion); it applies only while that suppression has not
-- expired, so an expired suppression stops applying by itself. Keep in step with ../sqlite/.
CREATE TABLE cve_suppressions (
    id UUID PRIMARY KEY,
    tenant_id UUID NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    ecosystem TEXT NOT NULL,
    package_name TEXT NOT NULL,
    package_key TEXT NOT NULL,
    version_range TEXT NOT NULL,
    vuln_id TEXT,
    reason TEXT NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL,
    created_by TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX cve_suppressions_tenant ON cve_suppressions (tenant_id, package_key);
ALTER TABLE cve_findings ADD COLUMN suppression_id UUID;
CREATE INDEX cve_findings_suppression ON cve_findings (suppression_id);
