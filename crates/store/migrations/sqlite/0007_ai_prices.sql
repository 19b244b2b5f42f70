-- Per-tenant overrides of the shipped LLM price table (micro-EUR per 1,000 tokens).
-- effective_from is a YYYY-MM-DD text on both engines.

CREATE TABLE ai_price_overrides (
    tenant_id BLOB NOT NULL REFERENCES tenants(id),
    model TEXT NOT NULL,
    effective_from TEXT NOT NULL,
    input BIGINT NOT NULL,
    output BIGINT NOT NULL,
    cache_read BIGINT NOT NULL,
    cache_write BIGINT NOT NULL,
    reasoning BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, model, effective_from)
);
