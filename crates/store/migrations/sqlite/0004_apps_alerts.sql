-- Tracked applications and their liveness, the agents' live state, alerts, alert rules,
-- webhooks with their delivery outbox, and leases for once-per-cluster periodic work.
-- Keep in step with ../postgres/.

-- What each agent last reported about its services, containers and processes, reduced by
-- the hub to `kind:identifier -> running|stopped` (see trusthub_core::apps::observed_map).
CREATE TABLE agent_live (
    agent_id BLOB PRIMARY KEY REFERENCES agents(id) ON DELETE CASCADE,
    received_at TEXT NOT NULL,
    observed TEXT NOT NULL
);

CREATE TABLE apps (
    id BLOB PRIMARY KEY,
    tenant_id BLOB NOT NULL REFERENCES tenants(id),
    agent_id BLOB NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
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
    UNIQUE (agent_id, app_type, identifier)
);
CREATE INDEX apps_tenant ON apps (tenant_id, id);

-- HTTP check results the agents report (history; the latest is also on the app row).
CREATE TABLE app_checks (
    app_id BLOB NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
    checked_at TEXT NOT NULL,
    ok INTEGER NOT NULL,
    status_code BIGINT,
    latency_ms BIGINT,
    error TEXT,
    PRIMARY KEY (app_id, checked_at)
);
CREATE INDEX app_checks_time ON app_checks (checked_at);

CREATE TABLE alerts (
    id BLOB PRIMARY KEY,
    tenant_id BLOB NOT NULL REFERENCES tenants(id),
    severity TEXT NOT NULL,
    severity_rank BIGINT NOT NULL,
    category TEXT NOT NULL,
    title TEXT NOT NULL,
    detail TEXT,
    source TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    agent_id BLOB,
    agent_hostname TEXT,
    app_id BLOB,
    rule_id BLOB,
    created_at TEXT NOT NULL,
    is_resolved INTEGER NOT NULL DEFAULT FALSE,
    resolved_at TEXT,
    resolved_by TEXT,
    resolution TEXT
);
-- One open alert per fingerprint (CONTRACT 7).
CREATE UNIQUE INDEX alerts_open_fingerprint ON alerts (tenant_id, fingerprint) WHERE NOT is_resolved;
CREATE INDEX alerts_tenant ON alerts (tenant_id, created_at DESC, id DESC);

CREATE TABLE alert_rules (
    id BLOB PRIMARY KEY,
    tenant_id BLOB NOT NULL REFERENCES tenants(id),
    name TEXT NOT NULL,
    metric TEXT NOT NULL,
    operator TEXT NOT NULL,
    threshold REAL NOT NULL,
    window_spec TEXT NOT NULL,
    window_secs BIGINT NOT NULL,
    severity TEXT NOT NULL,
    group_by TEXT NOT NULL,
    webhook_url TEXT,
    created_at TEXT NOT NULL,
    last_evaluated_at TEXT,
    last_groups BIGINT,
    last_firing BIGINT
);
CREATE INDEX alert_rules_tenant ON alert_rules (tenant_id, id);

CREATE TABLE webhooks (
    id BLOB PRIMARY KEY,
    tenant_id BLOB NOT NULL REFERENCES tenants(id),
    url TEXT NOT NULL,
    secret_sealed BLOB NOT NULL,
    secret_hint TEXT NOT NULL,
    events TEXT NOT NULL,
    min_severity TEXT NOT NULL,
    min_severity_rank BIGINT NOT NULL,
    agent_filter_tag TEXT,
    created_at TEXT NOT NULL,
    cooldown_until TEXT
);
CREATE INDEX webhooks_tenant ON webhooks (tenant_id, id);

-- The outbox: one row per delivery, written in the transaction that changed the alert.
-- webhook_id is NULL for alert-rule webhooks (target_url, unsigned minimal body).
CREATE TABLE webhook_deliveries (
    id BLOB PRIMARY KEY,
    tenant_id BLOB NOT NULL REFERENCES tenants(id),
    webhook_id BLOB REFERENCES webhooks(id) ON DELETE CASCADE,
    rule_id BLOB REFERENCES alert_rules(id) ON DELETE CASCADE,
    target_url TEXT NOT NULL,
    event TEXT NOT NULL,
    alert_id BLOB,
    payload TEXT NOT NULL,
    status TEXT NOT NULL,
    attempts BIGINT NOT NULL DEFAULT 0,
    next_attempt_at TEXT,
    last_attempt_at TEXT,
    last_status_code BIGINT,
    last_error TEXT,
    created_at TEXT NOT NULL,
    completed_at TEXT
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status IN ('pending', 'retrying');
CREATE INDEX webhook_deliveries_hook ON webhook_deliveries (webhook_id, created_at DESC);

-- Periodic work that must run once per cluster, not once per hub process.
CREATE TABLE leases (
    name TEXT PRIMARY KEY,
    holder TEXT NOT NULL,
    expires_at TEXT NOT NULL
);
