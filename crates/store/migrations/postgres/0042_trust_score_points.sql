-- Trust Score v13 on (CONTRACT 33): each version's history apart, so v12's stays as it was.
CREATE TABLE trust_score_points (
    tenant_id UUID NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    version TEXT NOT NULL,
    computed_at TIMESTAMPTZ NOT NULL,
    final_score DOUBLE PRECISION NOT NULL,
    band TEXT NOT NULL,
    inputs_sha256 TEXT NOT NULL,
    PRIMARY KEY (tenant_id, version, computed_at)
);
