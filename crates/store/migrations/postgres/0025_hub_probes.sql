-- Monitors the hub probes itself (CONTRACT 27): an http, tcp or tls app may have no agent,
-- and every probe kind counts its verdicts at its own interval (failures before down,
-- successes before up).
ALTER TABLE apps ALTER COLUMN agent_id DROP NOT NULL;
ALTER TABLE apps ADD COLUMN timeout_seconds BIGINT;
ALTER TABLE apps ADD COLUMN retries BIGINT NOT NULL DEFAULT 2;
ALTER TABLE apps ADD COLUMN recoveries BIGINT NOT NULL DEFAULT 1;
ALTER TABLE apps ADD COLUMN expected_status TEXT;
ALTER TABLE apps ADD COLUMN keyword TEXT;
ALTER TABLE apps ADD COLUMN tls_min_days BIGINT;
ALTER TABLE apps ADD COLUMN consecutive_failures BIGINT NOT NULL DEFAULT 0;
ALTER TABLE apps ADD COLUMN consecutive_successes BIGINT NOT NULL DEFAULT 0;
ALTER TABLE apps ADD COLUMN next_check_at TIMESTAMPTZ;
ALTER TABLE apps ADD COLUMN tls_expires_at TIMESTAMPTZ;
-- One hub-probed monitor per target and kind in a tenant (agent ones: per agent).
CREATE UNIQUE INDEX apps_hub_probed ON apps (tenant_id, app_type, identifier) WHERE agent_id IS NULL;
CREATE INDEX apps_probe_due ON apps (next_check_at) WHERE agent_id IS NULL;
