-- Auto-patch (CONTRACT 19): per-host settings (SPEC 2.8), the attempts the worker dispatched
-- (one signed action each), and the skips it recorded once per package, advisory and reason.
-- The attestation chain itself is the transparency log (subject_ref = agent id).
CREATE TABLE auto_patch_settings (
    agent_id BLOB PRIMARY KEY REFERENCES agents(id) ON DELETE CASCADE,
    tenant_id BLOB NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    os_packages INTEGER NOT NULL,
    app_deps INTEGER NOT NULL,
    min_severity TEXT NOT NULL,
    enabled_by BLOB,
    enabled_at TEXT,
    flag_seq INTEGER,
    last_run_at TEXT
);
CREATE TABLE auto_patch_attempts (
    eat_nonce TEXT PRIMARY KEY,
    tenant_id BLOB NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    agent_id BLOB NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
    category TEXT NOT NULL,
    manager TEXT NOT NULL,
    ecosystem TEXT NOT NULL,
    project_path TEXT NOT NULL,
    package_key TEXT NOT NULL,
    advisories TEXT NOT NULL,
    packages TEXT NOT NULL,
    status TEXT NOT NULL,
    exit_code INTEGER,
    note TEXT,
    created_at TEXT NOT NULL,
    expires_at TEXT NOT NULL,
    finished_at TEXT
);
CREATE INDEX auto_patch_attempts_agent ON auto_patch_attempts (agent_id, created_at);
CREATE TABLE auto_patch_skips (
    agent_id BLOB NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
    tenant_id BLOB NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    package TEXT NOT NULL,
    vuln_id TEXT NOT NULL,
    reason TEXT NOT NULL,
    detail TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (agent_id, package, vuln_id, reason, detail)
);
CREATE INDEX transparency_log_subject ON transparency_log (tenant_id, subject_ref, seq);
