-- Trust Score v12 (CONTRACT 21): the history of each tenant's score (a point whenever the
-- inputs changed, and at least every 30 minutes), and the owner's switch for the public badge.
CREATE TABLE trust_score_history (
    tenant_id BLOB NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    computed_at TEXT NOT NULL,
    final_score REAL NOT NULL,
    band TEXT NOT NULL,
    inputs_sha256 TEXT NOT NULL,
    PRIMARY KEY (tenant_id, computed_at)
);
CREATE TABLE trust_settings (
    tenant_id BLOB PRIMARY KEY REFERENCES tenants(id) ON DELETE CASCADE,
    badge_public INTEGER NOT NULL
);
