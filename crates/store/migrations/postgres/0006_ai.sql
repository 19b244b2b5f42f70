-- LLM traces and calls (CONTRACT 9) and content blobs stored once per SHA-256.
-- Keep in step with ../sqlite/.

CREATE TABLE ai_traces (
    tenant_id UUID NOT NULL REFERENCES tenants(id),
    trace_id TEXT NOT NULL,
    name TEXT NOT NULL,
    team TEXT NOT NULL,
    app_id UUID,
    started_at TIMESTAMPTZ NOT NULL,
    ended_at TIMESTAMPTZ NOT NULL,
    tags JSONB NOT NULL,
    received_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (tenant_id, trace_id)
);
CREATE INDEX ai_traces_time ON ai_traces (tenant_id, started_at);

CREATE TABLE ai_calls (
    tenant_id UUID NOT NULL REFERENCES tenants(id),
    span_id TEXT NOT NULL,
    trace_id TEXT NOT NULL,
    team TEXT NOT NULL,
    model TEXT NOT NULL,
    provider TEXT,
    prompt_tokens BIGINT NOT NULL,
    completion_tokens BIGINT NOT NULL,
    cache_read_tokens BIGINT NOT NULL,
    cache_write_tokens BIGINT NOT NULL,
    reasoning_tokens BIGINT NOT NULL,
    latency_ms BIGINT NOT NULL,
    prompt_sha256 TEXT NOT NULL,
    content_sha256 TEXT,
    refused BOOLEAN NOT NULL,
    started_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (tenant_id, span_id)
);
CREATE INDEX ai_calls_time ON ai_calls (tenant_id, started_at);

CREATE TABLE ai_blobs (
    tenant_id UUID NOT NULL REFERENCES tenants(id),
    sha256 TEXT NOT NULL,
    text TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (tenant_id, sha256)
);
