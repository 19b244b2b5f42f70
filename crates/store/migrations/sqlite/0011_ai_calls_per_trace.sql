-- A call is identified by (trace_id, span_id), never by span_id alone (CONTRACT 13): two
-- traces may both have a span "s1", and the second one's call was acknowledged and silently
-- dropped. Rows carried over as they are. Keep in step with ../postgres/.

CREATE TABLE ai_calls_new (
    tenant_id BLOB NOT NULL REFERENCES tenants(id),
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
    refused INTEGER NOT NULL,
    started_at TEXT NOT NULL,
    PRIMARY KEY (tenant_id, trace_id, span_id)
);
INSERT INTO ai_calls_new SELECT tenant_id, span_id, trace_id, team, model, provider, prompt_tokens,
    completion_tokens, cache_read_tokens, cache_write_tokens, reasoning_tokens, latency_ms,
    prompt_sha256, content_sha256, refused, started_at FROM ai_calls;
DROP TABLE ai_calls;
ALTER TABLE ai_calls_new RENAME TO ai_calls;
-- Evidence pages walk calls in (started_at, span_id, trace_id) order.
CREATE INDEX ai_calls_time ON ai_calls (tenant_id, started_at, span_id, trace_id);
CREATE INDEX ai_calls_content ON ai_calls (tenant_id, content_sha256);
