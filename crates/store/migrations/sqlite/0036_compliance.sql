-- Compliance, security view (CONTRACT 25): governance's compliance interval and honeypots,
-- runs asked for by people and the hosts each still owes, the latest result per host and
-- check (one document per host), a per-run summary for pass/fail over time, touched honeypots, each host's DNA.
ALTER TABLE agents ADD COLUMN compliance_interval_secs BIGINT NOT NULL DEFAULT 43200;
ALTER TABLE agents ADD COLUMN honeypots TEXT NOT NULL DEFAULT '[]';
CREATE TABLE compliance_runs (
    id BLOB PRIMARY KEY,
    tenant_id BLOB NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    agent_id BLOB REFERENCES agents(id) ON DELETE CASCADE,
    requested_by TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE INDEX compliance_runs_tenant ON compliance_runs (tenant_id, created_at);
CREATE TABLE compliance_run_hosts (
    run_id BLOB NOT NULL REFERENCES compliance_runs(id) ON DELETE CASCADE,
    agent_id BLOB NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
    done_at TEXT,
    PRIMARY KEY (run_id, agent_id)
);
CREATE INDEX compliance_run_hosts_agent ON compliance_run_hosts (agent_id, done_at);
-- The latest run's results of a host, as one document (a JSON array of {check_id, status,
-- evidence, remediation?}; remediation left out when it is the check's own text): listings
-- read one row per host, not one per check (bench/RESULTS.md).
CREATE TABLE compliance_results (
    tenant_id BLOB NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    agent_id BLOB PRIMARY KEY REFERENCES agents(id) ON DELETE CASCADE,
    checked_at TEXT NOT NULL,
    run_id BLOB,
    results TEXT NOT NULL
);
CREATE INDEX compliance_results_tenant ON compliance_results (tenant_id);
CREATE TABLE compliance_history (
    tenant_id BLOB NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    agent_id BLOB NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
    checked_at TEXT NOT NULL,
    run_id BLOB,
    passed BIGINT NOT NULL,
    failed BIGINT NOT NULL,
    not_applicable BIGINT NOT NULL,
    errors BIGINT NOT NULL,
    PRIMARY KEY (agent_id, checked_at)
);
CREATE INDEX compliance_history_tenant ON compliance_history (tenant_id, checked_at);
CREATE TABLE honeypot_events (
    id BLOB PRIMARY KEY,
    tenant_id BLOB NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    agent_id BLOB NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
    kind TEXT NOT NULL,
    target TEXT NOT NULL,
    triggered_at TEXT NOT NULL,
    detail TEXT NOT NULL,
    received_at TEXT NOT NULL
);
CREATE INDEX honeypot_events_latest ON honeypot_events (tenant_id, agent_id, kind, target, triggered_at);
CREATE TABLE host_dna (
    tenant_id BLOB NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    agent_id BLOB PRIMARY KEY REFERENCES agents(id) ON DELETE CASCADE,
    fingerprint_sha256 TEXT NOT NULL,
    parts TEXT NOT NULL,
    seen_at TEXT NOT NULL,
    changed_at TEXT,
    previous TEXT
);
