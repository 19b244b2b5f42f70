-- Agents: enrollment, registration with a pinned signing key, ingest de-duplication,
-- metric series and points, inventory snapshots, process lists. Keep in step with ../postgres/.

CREATE TABLE enrollment_tokens (
    id BLOB PRIMARY KEY,
    tenant_id BLOB NOT NULL REFERENCES tenants(id),
    token_hash TEXT NOT NULL UNIQUE,
    tags TEXT NOT NULL,
    created_by BLOB REFERENCES users(id) ON DELETE SET NULL,
    created_at TEXT NOT NULL,
    expires_at TEXT NOT NULL
);

CREATE TABLE agents (
    id BLOB PRIMARY KEY,
    tenant_id BLOB NOT NULL REFERENCES tenants(id),
    machine_id TEXT NOT NULL,
    hostname TEXT NOT NULL,
    os TEXT NOT NULL,
    arch TEXT NOT NULL,
    agent_version TEXT NOT NULL,
    tags TEXT NOT NULL,
    signing_pubkey TEXT,
    token_hash TEXT NOT NULL UNIQUE,
    created_at TEXT NOT NULL,
    last_seen_at TEXT,
    last_heartbeat TEXT,
    ingest_interval_secs BIGINT NOT NULL,
    inventory_interval_secs BIGINT NOT NULL,
    allowed_actions TEXT NOT NULL,
    reported_actions TEXT,
    UNIQUE (tenant_id, machine_id)
);
CREATE INDEX agents_tenant ON agents (tenant_id);

CREATE TABLE ingest_batches (
    agent_id BLOB NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
    batch_id BLOB NOT NULL,
    received_at TEXT NOT NULL,
    PRIMARY KEY (agent_id, batch_id)
);
CREATE INDEX ingest_batches_received ON ingest_batches (received_at);

CREATE TABLE metric_series (
    id INTEGER PRIMARY KEY,
    agent_id BLOB NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    labels TEXT NOT NULL,
    UNIQUE (agent_id, name, labels)
);

-- ts is unix milliseconds.
CREATE TABLE metric_points (
    series_id BIGINT NOT NULL REFERENCES metric_series(id) ON DELETE CASCADE,
    ts BIGINT NOT NULL,
    value REAL NOT NULL,
    PRIMARY KEY (series_id, ts)
) WITHOUT ROWID;

CREATE TABLE inventory_snapshots (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    agent_id BLOB NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
    collected_at TEXT NOT NULL,
    received_at TEXT NOT NULL,
    snapshot TEXT NOT NULL
);
CREATE INDEX inventory_snapshots_agent ON inventory_snapshots (agent_id, id DESC);

CREATE TABLE agent_processes (
    agent_id BLOB PRIMARY KEY REFERENCES agents(id) ON DELETE CASCADE,
    received_at TEXT NOT NULL,
    processes TEXT NOT NULL
);
