-- Agents: enrollment, registration with a pinned signing key, ingest de-duplication,
-- metric series and points, inventory snapshots, process lists. Keep in step with ../sqlite/.

CREATE TABLE enrollment_tokens (
    id UUID PRIMARY KEY,
    tenant_id UUID NOT NULL REFERENCES tenants(id),
    token_hash TEXT NOT NULL UNIQUE,
    tags JSONB NOT NULL,
    created_by UUID REFERENCES users(id) ON DELETE SET NULL,
    created_at TIMESTAMPTZ NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL
);

CREATE TABLE agents (
    id UUID PRIMARY KEY,
    tenant_id UUID NOT NULL REFERENCES tenants(id),
    machine_id TEXT NOT NULL,
    hostname TEXT NOT NULL,
    os TEXT NOT NULL,
    arch TEXT NOT NULL,
    agent_version TEXT NOT NULL,
    tags JSONB NOT NULL,
    signing_pubkey TEXT,
    token_hash TEXT NOT NULL UNIQUE,
    created_at TIMESTAMPTZ NOT NULL,
    last_seen_at TIMESTAMPTZ,
    last_heartbeat JSONB,
    ingest_interval_secs BIGINT NOT NULL,
    inventory_interval_secs BIGINT NOT NULL,
    allowed_actions JSONB NOT NULL,
    reported_actions JSONB,
    UNIQUE (tenant_id, machine_id)
);
CREATE INDEX agents_tenant ON agents (tenant_id);

CREATE TABLE ingest_batches (
    agent_id UUID NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
    batch_id UUID NOT NULL,
    received_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (agent_id, batch_id)
);
CREATE INDEX ingest_batches_received ON ingest_batches (received_at);

CREATE TABLE metric_series (
    id BIGSERIAL PRIMARY KEY,
    agent_id UUID NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    labels TEXT NOT NULL,
    UNIQUE (agent_id, name, labels)
);

-- ts is unix milliseconds.
CREATE TABLE metric_points (
    series_id BIGINT NOT NULL REFERENCES metric_series(id) ON DELETE CASCADE,
    ts BIGINT NOT NULL,
    value DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (series_id, ts)
);

CREATE TABLE inventory_snapshots (
    id BIGSERIAL PRIMARY KEY,
    agent_id UUID NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
    collected_at TIMESTAMPTZ NOT NULL,
    received_at TIMESTAMPTZ NOT NULL,
    snapshot JSONB NOT NULL
);
CREATE INDEX inventory_snapshots_agent ON inventory_snapshots (agent_id, id DESC);

CREATE TABLE agent_processes (
    agent_id UUID PRIMARY KEY REFERENCES agents(id) ON DELETE CASCADE,
    received_at TIMESTAMPTZ NOT NULL,
    processes JSONB NOT NULL
);
