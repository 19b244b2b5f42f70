-- Secrets inside outbound URLs (CONTRACT 18): a URL with userinfo (`https://user:pass@host`)
-- is kept in its column as `https://***@host/...` and, whole, sealed with the hub key here.
-- Keep in step with ../sqlite/.
ALTER TABLE webhooks ADD COLUMN url_sealed BYTEA;
ALTER TABLE alert_rules ADD COLUMN webhook_url_sealed BYTEA;
ALTER TABLE webhook_deliveries ADD COLUMN target_url_sealed BYTEA;
