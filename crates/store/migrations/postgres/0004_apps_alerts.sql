-- Tracked applications and their liveness, the agents' live state, alerts, alert rules,
-- webhooks with their delivery outbox, and leases for once-per-cluster periodic work.
-- Keep in step with ../sqlite/.

-- What each agent last reported about its services, containers and processes, reduced by
-- the hub to `kind:identifier -> running|stopped` (see trusthub_core::apps::observed_map).
CREATE TABLE agent_live (
    agent_id UUID PRIMARY KEY REFERENCES agents(id) ON DELETE CASCADE,
    received_at TIMESTAMPTZ NOT NULL,
    observed JSONB NOT NULL
);

CREATE TABLE apps (
    id UUID PRIMARY KEY,
    tenant_id UUID NOT NULL REFERENCES tenants(id),
    agent_id UUID NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
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
    last_state_change TIMESTAMPTZ,
    last_checked_at TIMESTAMPTZ,
    alerting BOOLEAN NOT NULL DEFAULT FALSE,
    last_check_at TIMESTAMPTZ,
    last_check_ok BOOLEAN,
    last_check_status BIGINT,
    last_check_latency_ms BIGINT,
    last_check_error TEXT,
    created_at TIMESTAMPTZ NOT NULL,
    UNIQUE (agent_id, app_type, identifier)
);
CREATE INDEX apps_tenant ON apps (tenant_id, id);

-- HTTP check results the agents report (history; the latest is also on the app row).
CREATE TABLE app_checks (
    app_id UUID NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
    checked_at TIMESTAMPTZ NOT NULL,
    ok BOOLEAN NOT NULL,
    status_code BIGINT,
    latency_ms BIGINT,
    error TEXT,
    PRIMARY KEY (app_id, checked_at)
);
CREATE INDEX app_checks_time ON app_checks (checked_at);

CREATE TABLE alerts (
    id UUID PRIMARY KEY,
    tenant_id UUID NOT NULL REFERENCES tenants(id),
    severity TEXT NOT NULL,
    severity_rank BIGINT NOT NULL,
    category TEXT NOT NULL,
    title TEXT NOT NULL,
    detail TEXT,
    source TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    agent_id UUID,
    agent_hostname TEXT,
    app_id UUID,
    rule_id UUID,
    created_at TIMESTAMPTZ NOT NULL,
    is_resolved BOOLEAN NOT NULL DEFAULT FALSE,
    resolved_at TIMESTAMPTZ,
    resolved_by TEXT,
    resolution TEXT
);
-- One open alert per fingerprint (CONTRACT 7).
CREATE UNIQUE INDEX alerts_open_fingerprint ON alerts (tenant_id, fingerprint) WHERE NOT is_resolved;
CREATE INDEX alerts_tenant ON alerts (tenant_id, created_at DESC, id DESC);

CREATE TABLE alert_rules (
    id UUID PRIMARY KEY,
    tenant_id UUID NOT NULL REFERENCES tenants(id),
    name TEXT NOT NULL,
    metric TEXT NOT NULL,
    operator TEXT NOT NULL,
    threshold DOUBLE PRECISION NOT NULL,
    window_spec TEXT NOT NULL,
    window_secs BIGINT NOT NULL,
    severity TEXT NOT NULL,
    group_by JSONB NOT NULL,
    webhook_url TEXT,
    created_at TIMESTAMPTZ NOT NULL,
    last_evaluated_at TIMESTAMPTZ,
    last_groups BIGINT,
    last_firing BIGINT
);
CREATE INDEX alert_rules_tenant ON alert_rules (tenant_id, id);

CREATE TABLE webhooks (
    id UUID PRIMARY KEY,
    tenant_id UUID NOT NULL REFERENCES tenants(id),
    url TEXT NOT NULL,
    secret_sealed BYTEA NOT NULL,
    secret_hint TEXT NOT NULL,
    events JSONB NOT NULL,
    min_severity TEXT NOT NULL,
    min_severity_rank BIGINT NOT NULL,
    agent_filter_tag TEXT,
    created_at TIMESTAMPTZ NOT NULL,
    cooldown_until TIMESTAMPTZ
);
CREATE INDEX webhooks_tenant ON webhooks (tenant_id, id);

-- The outbox: one row per delivery, written in the transaction that changed the alert.
-- webhook_id is NULL for alert-rule webhooks (target_url, unsigned minimal body).
CREATE TABLE webhook_deliveries (
    id UUID PRIMARY KEY,
    tenant_id UUID NOT NULL REFERENCES tenants(id),
    webhook_id UUID REFERENCES webhooks(id) ON DELETE CASCADE,
    rule_id UUID REFERENCES alert_rules(id) ON DELETE CASCADE,
    target_url TEXT NOT NULL,
    event TEXT NOT NULL,
    alert_id UUID,
    payload TEXT NOT NULL,
    status TEXT NOT NULL,
    attempts BIGINT NOT NULL DEFAULT 0,
    next_attempt_at TIMESTAMPTZ,
    last_attempt_at TIMESTAMPTZ,
    last_status_code BIGINT,
    last_error TEXT,
    created_at TIMESTAMPTZ NOT NULL,
    completed_at TIMESTAMPTZ
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status IN ('pending', 'retrying');
CREATE INDEX webhook_deliveries_hook ON webhook_deliveries (webhook_id, created_at DESC);

-- Periodic work that must run once per cluster, not once per hub process.
CREATE TABLE leases (
    name TEXT PRIMARY KEY,
    holder TEXT NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL
);
