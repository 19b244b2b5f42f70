-- no-transaction
-- Monitors the hub probes itself (CONTRACT 27): an http, tcp or tls app may have no agent,
-- and every probe kind counts its verdicts at its own interval (failures before down,
-- successes before up). SQLite cannot drop NOT NULL in place: the table is rebuilt with
-- foreign keys off (the documented procedure), inside one transaction.
PRAGMA foreign_keys = OFF;
BEGIN;
CREATE TABLE apps_new (
    id BLOB PRIMARY KEY,
    tenant_id BLOB NOT NULL REFERENCES tenants(id),
    agent_id BLOB REFERENCES agents(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    app_type TEXT NOT NULL,
    identifier TEXT NOT NULL,
    owner_email TEXT,
    runbook_url TEXT,
    notes TEXT,
    expected_state TEXT NOT NULL,
    restart_command TEXT,
    endpoint TEXT,
    interval_seconds BIGINT,
    consecutive_mismatch BIGINT NOT NULL DEFAULT 0,
    consecutive_unknown BIGINT NOT NULL DEFAULT 0,
    observed_state TEXT,
    last_state_change TEXT,
    last_checked_at TEXT,
    alerting INTEGER NOT NULL DEFAULT FALSE,
    last_check_at TEXT,
    last_check_ok INTEGER,
    last_check_status BIGINT,
    last_check_latency_ms BIGINT,
    last_check_error TEXT,
    created_at TEXT NOT NULL,
    timeout_seconds BIGINT,
    retries BIGINT NOT NULL DEFAULT 2,
    recoveries BIGINT NOT NULL DEFAULT 1,
    expected_status TEXT,
    keyword TEXT,
    tls_min_days BIGINT,
    consecutive_failures BIGINT NOT NULL DEFAULT 0,
    consecutive_successes BIGINT NOT NULL DEFAULT 0,
    next_check_at TEXT,
    tls_expires_at TEXT,
    UNIQUE (agent_id, app_type, identifier)
);
INSERT INTO apps_new (id, tenant_id, agent_id, name, app_type, identifier, owner_email, runbook_url,
    notes, expected_state, restart_command, endpoint, interval_seconds, consecutive_mismatch,
    consecutive_unknown, observed_state, last_state_change, last_checked_at, alerting,
    last_check_at, last_check_ok, last_check_status, last_check_latency_ms, last_check_error,
    created_at)
SELECT id, tenant_id, agent_id, name, app_type, identifier, owner_email, runbook_url,
    notes, expected_state, restart_command, endpoint, interval_seconds, consecutive_mismatch,
    consecutive_unknown, observed_state, last_state_change, last_checked_at, alerting,
    last_check_at, last_check_ok, last_check_status, last_check_latency_ms, last_check_error,
    created_at FROM apps;
DROP TABLE apps;
ALTER TABLE apps_new RENAME TO apps;
CREATE INDEX apps_tenant ON apps (tenant_id, id);
-- One hub-probed monitor per target and kind in a tenant (agent ones: per agent, above).
CREATE UNIQUE INDEX apps_hub_probed ON apps (tenant_id, app_type, identifier) WHERE agent_id IS NULL;
CREATE INDEX apps_probe_due ON apps (next_check_at) WHERE agent_id IS NULL;
COMMIT;
PRAGMA foreign_keys = ON;
