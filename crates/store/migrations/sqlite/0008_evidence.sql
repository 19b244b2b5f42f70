-- Evidence packs (SPEC 2.10; CONTRACT 8). The bundle is a file in the evidence directory;
-- this row is its record. Keep in step with ../postgres/.

CREATE TABLE evidence_packs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    tenant_id BLOB NOT NULL REFERENCES tenants(id),
    app_id BLOB,
    period_start TEXT NOT NULL,
    period_end TEXT NOT NULL,
    include_blobs INTEGER NOT NULL,
    status TEXT NOT NULL,
    traces_sha256 TEXT,
    spans_sha256 TEXT,
    blobs_sha256 TEXT,
    trace_count BIGINT NOT NULL DEFAULT 0,
    span_count BIGINT NOT NULL DEFAULT 0,
    blob_count BIGINT NOT NULL DEFAULT 0,
    total_cost_micro_eur BIGINT NOT NULL DEFAULT 0,
    unpriced_span_count BIGINT NOT NULL DEFAULT 0,
    manifest_sha256 TEXT,
    signing_public_hex TEXT,
    size_bytes BIGINT NOT NULL DEFAULT 0,
    transparency_seq BIGINT,
    created_by TEXT NOT NULL,
    created_at TEXT NOT NULL,
    expires_at TEXT NOT NULL
);
CREATE INDEX evidence_packs_tenant ON evidence_packs (tenant_id, id);
CREATE INDEX evidence_packs_same ON evidence_packs (tenant_id, period_start, period_end, spans_sha256);

-- Packs read traces and calls in (start, id) order.
DROP INDEX ai_traces_time;
CREATE INDEX ai_traces_time ON ai_traces (tenant_id, started_at, trace_id);
DROP INDEX ai_calls_time;
CREATE INDEX ai_calls_time ON ai_calls (tenant_id, started_at, span_id);

-- Blobs referenced by the calls of a period.
CREATE INDEX ai_calls_content ON ai_calls (tenant_id, content_sha256);
