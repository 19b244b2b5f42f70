-- Notification channels (CONTRACT 27): Slack, Discord, Teams, Telegram, ntfy, e-mail,
-- PagerDuty and signed webhooks; the config sealed with the hub key, shown masked. Their
-- deliveries go through the webhook outbox (retries, delivery log) with channel_id set.
CREATE TABLE notification_channels (
    id UUID PRIMARY KEY,
    tenant_id UUID NOT NULL REFERENCES tenants(id),
    name TEXT NOT NULL,
    kind TEXT NOT NULL,
    config_shown JSONB NOT NULL,
    config_sealed BYTEA NOT NULL,
    events JSONB NOT NULL,
    min_severity TEXT NOT NULL,
    min_severity_rank BIGINT NOT NULL,
    agent_filter_tag TEXT,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX notification_channels_tenant ON notification_channels (tenant_id, id);
ALTER TABLE webhook_deliveries ADD COLUMN channel_id UUID REFERENCES notification_channels(id) ON DELETE CASCADE;
CREATE INDEX webhook_deliveries_channel ON webhook_deliveries (channel_id, created_at) WHERE channel_id IS NOT NULL;
